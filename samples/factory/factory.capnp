@0xb5a05ba866ec05c0;
# The factory sample's payloads.

# One part on its way down a line (topics line/<n>/raw, cut, pressed, packed).
struct Part {
  line @0 :UInt8;
  serial @1 :UInt32;
  weight @2 :UInt32;   # grams, set by the cutter
  grade @3 :Text;      # set by the packer from the quality service's verdict
}

# The quality service (/factory/quality, method `inspect`): a typed request and its reply.
struct Inspection {
  line @0 :UInt8;
  serial @1 :UInt32;
  weight @2 :UInt32;
}

struct Verdict {
  grade @0 :Text;
}
