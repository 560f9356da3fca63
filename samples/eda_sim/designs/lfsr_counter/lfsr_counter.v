// A loadable up/down counter and a Galois LFSR whose taps are a parameter, plus a prescaler that
// enables the LFSR every 2^P cycles. Async active-low reset; the LFSR seeds to a non-zero constant
// (async set and reset bits).
module counter #(parameter W = 8) (input clk, input rst_n, input en, input up, input load,
                                   input [W-1:0] value, output reg [W-1:0] count, output wrap);
  always @(posedge clk or negedge rst_n)
    if (!rst_n) count <= 0;
    else if (load) count <= value;
    else if (en) count <= up ? count + 1'b1 : count - 1'b1;
  assign wrap = en & (up ? &count : ~|count);
endmodule

module lfsr #(parameter W = 16, parameter [W-1:0] TAPS = 16'hB400, parameter [W-1:0] SEED = 16'hACE1)
             (input clk, input rst_n, input step, output reg [W-1:0] state);
  always @(posedge clk or negedge rst_n)
    if (!rst_n) state <= SEED;
    else if (step) state <= state[0] ? (state >> 1) ^ TAPS : state >> 1;
endmodule

module lfsr_counter (input clk, input rst_n, input en, input up, input load, input [11:0] value,
                     output [11:0] count, output wrap, output [15:0] random, output [7:0] random8);
  wire [3:0] pre;
  wire pre_wrap;
  counter #(.W(4)) prescale (.clk(clk), .rst_n(rst_n), .en(1'b1), .up(1'b1), .load(1'b0), .value(4'd0),
                             .count(pre), .wrap(pre_wrap));
  counter #(.W(12)) main (.clk(clk), .rst_n(rst_n), .en(en), .up(up), .load(load), .value(value),
                          .count(count), .wrap(wrap));
  lfsr #(.W(16), .TAPS(16'hB400), .SEED(16'hACE1)) l16 (.clk(clk), .rst_n(rst_n), .step(pre_wrap | en),
                                                        .state(random));
  lfsr #(.W(8), .TAPS(8'hB8), .SEED(8'h5A)) l8 (.clk(clk), .rst_n(rst_n), .step(wrap), .state(random8));
endmodule
