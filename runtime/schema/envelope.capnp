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

  # The receiver's send session that `delivered`, `received` and `resendFrom` are about (anything
  # about an older session is ignored).
  ackSession @7 :UInt32;

  # Since version 3 (docs/runtime.md, "Identity", "Retransmission", "Liveness").

  # The sender's node name. ZeroMQ routing ids are per connection (chosen by the ROUTER), so no
  # connection can take over another's route; who a frame is from is this claim, checked against
  # the CURVE key (User-Id) or bound by the handshake on incarnations (`target`).
  sender @8 :Text;

  # Highest sequence of session `ackSession` the sender has received in order (delivered or not).
  received @9 :UInt64;

  # Data channel only: the highest sequence of `session` written on it up to this frame (0 on the
  # control channel). A receiver that has not got that far after this frame lost envelopes in
  # transit and asks for them again (`resendFrom`).
  sent @10 :UInt64;

  # Nonzero: the sender misses envelopes of the receiver's session `ackSession` from this sequence
  # on (go-back-N): the receiver writes them again from there.
  resendFrom @11 :UInt64;

  # The sender has heard the receiver before and hears it no more (liveness is two-way: the
  # receiver, which may still hear the sender, reconnects).
  suspect @12 :Bool;

  # The sender's credit window in payload bytes (credit is granted per quarter of either window).
  windowBytes @13 :UInt64;

  # The largest ZeroMQ frame the sender accepts (a peer never writes a larger one to it).
  maxFrame @14 :UInt64;

  # Digest of the configuration both ends must share (the deployment); 0: not checked. A peer with
  # another nonzero digest is refused at the handshake.
  digest @15 :UInt64;

  # Which of the sender's two connections carried the frame: false = data (envelopes, `sent`),
  # true = control (heartbeats, credit), so a heartbeat never waits behind data.
  control @16 :Bool;

  # Since version 6 (docs/runtime.md, "Large payloads").

  # The largest payload (and text) the sender accepts in one envelope, whole or in chunks: a peer
  # never sends a larger one to it (send() refuses it).
  maxPayload @17 :UInt64;

  # Which envelopes of this frame are chunks of a large payload (struct Chunk).
  chunks @18 :List(Chunk);
}

# One message of the node protocol. The typed fields below the payload size carry what the SDK's
# kinds need (sdk/src/node_wire.hpp says which kind uses which); numbers and codes travel as numbers,
# never as text, and the receiver checks every field of every kind it knows.
struct Envelope {
  kind @0 :UInt16;
  # The link's sequence number (1, 2, ... per send session), set by the transport.
  sequence @1 :UInt64;
  # Bytes of this envelope's payload in the payload frame (payloads appear in envelope order).
  payloadSize @2 :UInt32;

  # Before version 5 the sender and scope were component paths (text); unused since.
  obsoleteSender @3 :Text;
  obsoleteScope @4 :Text;
  topic @5 :Text;     # a topic, a subscription filter, or a request's method
  target @6 :Text;    # a component path (a request's target)
  text @7 :Text;      # a reply's error text

  id @8 :UInt64;               # a subscription's or a request's id
  originSequence @9 :UInt64;   # a data message's per-publisher sequence number
  entry @10 :UInt32 = 0xffffffff;  # the tree vertex where a data message enters the receiving node
  from @11 :UInt32 = 0xffffffff;   # the vertex it comes from (0xffffffff: none)
  code @12 :Int32;             # an exit code (quit) or a reply's outcome
  timeoutMs @13 :UInt32;       # a request's timeout
  urgent @14 :Bool;            # a quit that goes ahead of queued messages
  # Since version 5: tree vertices, as `entry` (every node holds the same tree: the deployment's
  # digest says so). 0xffffffff: none.
  sender @15 :UInt32 = 0xffffffff;  # the publisher, subscriber, requester or watcher
  scope @16 :UInt32 = 0xffffffff;   # the scope of a publish
}

# Since version 6: a payload larger than the sender's chunk size travels as chunks, each an
# envelope of its own under the link's credit, with the same fields; the receiver delivers one
# envelope, with the whole payload, when the last chunk has arrived. A frame lists which of its
# envelopes are chunks (`Frame.chunks`), so an envelope that is not one carries no extra bytes.
struct Chunk {
  envelope @0 :UInt32;  # its index in the frame's `envelopes`
  of @1 :UInt64;        # the link sequence of the first chunk of its payload
  total @2 :UInt64;     # the whole payload's bytes
  offset @3 :UInt64;    # where this chunk's bytes go in it
}
