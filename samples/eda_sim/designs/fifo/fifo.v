// A synchronous FIFO (DEPTH entries of W bits) with a registered occupancy counter, and a checker
// that tracks the running XOR of everything pushed and popped.
module fifo_core #(parameter W = 8, parameter DEPTH = 8, parameter A = 3) (
  input clk, input rst, input push, input pop, input [W-1:0] din,
  output [W-1:0] dout, output full, output empty, output reg [A:0] count);
  reg [W-1:0] mem [0:DEPTH-1];
  reg [A-1:0] wp, rp;
  wire do_push = push & ~full;
  wire do_pop = pop & ~empty;
  always @(posedge clk) begin
    if (do_push) mem[wp] <= din;
  end
  always @(posedge clk or posedge rst)
    if (rst) begin
      wp <= 0;
      rp <= 0;
      count <= 0;
    end else begin
      if (do_push) wp <= wp + 1'b1;
      if (do_pop) rp <= rp + 1'b1;
      count <= count + do_push - do_pop;
    end
  assign full = count == DEPTH;
  assign empty = count == 0;
  assign dout = empty ? {W{1'b0}} : mem[rp];
endmodule

module xor_tracker #(parameter W = 8) (input clk, input rst, input en, input [W-1:0] d, output reg [W-1:0] acc);
  always @(posedge clk or posedge rst)
    if (rst) acc <= 0;
    else if (en) acc <= acc ^ d;
endmodule

module fifo (input clk, input rst, input push, input pop, input [7:0] din,
             output [7:0] dout, output full, output empty, output [3:0] count,
             output [7:0] pushed_xor, output [7:0] popped_xor);
  fifo_core #(.W(8), .DEPTH(8), .A(3)) q (.clk(clk), .rst(rst), .push(push), .pop(pop), .din(din),
                                         .dout(dout), .full(full), .empty(empty), .count(count));
  xor_tracker #(.W(8)) tin (.clk(clk), .rst(rst), .en(push & ~full), .d(din), .acc(pushed_xor));
  xor_tracker #(.W(8)) tout (.clk(clk), .rst(rst), .en(pop & ~empty), .d(dout), .acc(popped_xor));
endmodule
