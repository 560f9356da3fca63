# Wire format of a banyan link (docs/runtime.md, "Transport"). One ZeroMQ message from a node's
# DEALER to a peer's ROUTER has two frames: a `Frame` header (this schema, unpacked, single segment)
# and one frame holding the payload bytes of every envelope of a batch, back to back, unchanged.
@0xa0bf1d03a41c49e2;

$import "/capnp/c++.capnp".namespace("banyan::runtime::wire");

struct Frame {
  # Read first and checked before anything else: a node answers a frame of another version by
  # counting and logging it, never by guessing at its layout.
  version @0 :UInt16;

  # Random per transport start. A peer whose incarnation changes has restarted: both directions of
  # the link start again.
  incarnation @1 :UInt64;

  # The receiver's incarnation this frame is meant for (0 when not known yet). Data addressed to an
  # earlier incarnation of the receiver is stale and counted, not delivered.
  target @2 :UInt64;

  # Cumulative count of the receiver's envelopes (of its send session `ackSession`) that the sender
  # has delivered to its application: the credit grant, carried by every frame.
  delivered @3 :UInt64;

  # Envelopes of a data batch; empty in a heartbeat / credit-only frame.
  envelopes @4 :List(Envelope);

  # The sender's credit window: the receiver grants credit after each quarter of it, so a sender
  # with a small window is never left waiting for a heartbeat to carry its credit.
  window @5 :UInt32;

  # The sender's send session towards the receiver: 1, 2, ... per incarnation, a new one each time
  # the sender gave the link up (peer lost). Sequence numbers start at 1 in each session; the
  # receiver resets its side of this direction when it sees a newer session.
  session @6 :UInt32;

  # The receiver's send session that `delivered` counts (credit for an older session is ignored).
  ackSession @7 :UInt32;
}

struct Envelope {
  kind @0 :UInt16;
  sender @1 :Text;
  scope @2 :Text;
  topic @3 :Text;
  extra @4 :List(Text);
  sequence @5 :UInt64;
  # Bytes of this envelope's payload in the payload frame (payloads appear in envelope order).
  payloadSize @6 :UInt32;
}
