@0xfbe7bea170f11e5d;
# The hello sample's payload: one temperature reading.

struct Reading {
  room @0 :Text;
  celsius @1 :Float64;
  index @2 :UInt32;
}
