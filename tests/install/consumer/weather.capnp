@0xbb67038450e8e08e;
# The worked example's messages (docs/install.md): readings published by stations, and the typed
# request/reply a station's composite answers.

struct Reading {
  station @0 :Text;
  celsius @1 :Float64;
}

struct Query {
  minReadings @0 :UInt32;  # answer only once this many readings arrived, else say so
}

struct Summary {
  readings @0 :UInt32;
  meanCelsius @1 :Float64;
}
