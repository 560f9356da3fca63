@0x89004af7c6a5fdbc;
# Schemas for the SDK's typed publish/subscribe tests.

struct Sample {
  value @0 :UInt64;
  text @1 :Text;
  items @2 :List(UInt32);
}
