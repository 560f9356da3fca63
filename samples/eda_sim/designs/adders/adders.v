// Two W-bit adders built from the same full adder: ripple carry and 4-bit carry-lookahead blocks.
// Both sums are registered (async reset) and compared; `agree` is 1 whenever they match.
module full_adder (input a, input b, input ci, output s, output co);
  assign s  = a ^ b ^ ci;
  assign co = (a & b) | (ci & (a ^ b));
endmodule

module ripple_adder #(parameter W = 8) (input [W-1:0] a, input [W-1:0] b, input ci, output [W-1:0] s, output co);
  wire [W:0] c;
  assign c[0] = ci;
  genvar i;
  generate
    for (i = 0; i < W; i = i + 1) begin : bit_
      full_adder fa (.a(a[i]), .b(b[i]), .ci(c[i]), .s(s[i]), .co(c[i+1]));
    end
  endgenerate
  assign co = c[W];
endmodule

module cla4 (input [3:0] a, input [3:0] b, input ci, output [3:0] s, output co);
  wire [3:0] g = a & b;
  wire [3:0] p = a ^ b;
  wire [4:0] c;
  assign c[0] = ci;
  assign c[1] = g[0] | (p[0] & c[0]);
  assign c[2] = g[1] | (p[1] & g[0]) | (p[1] & p[0] & c[0]);
  assign c[3] = g[2] | (p[2] & g[1]) | (p[2] & p[1] & g[0]) | (p[2] & p[1] & p[0] & c[0]);
  assign c[4] = g[3] | (p[3] & g[2]) | (p[3] & p[2] & g[1]) | (p[3] & p[2] & p[1] & g[0]) |
                (p[3] & p[2] & p[1] & p[0] & c[0]);
  assign s = p ^ c[3:0];
  assign co = c[4];
endmodule

module cla_adder #(parameter W = 8) (input [W-1:0] a, input [W-1:0] b, input ci, output [W-1:0] s, output co);
  wire [W/4:0] c;
  assign c[0] = ci;
  genvar i;
  generate
    for (i = 0; i < W/4; i = i + 1) begin : blk
      cla4 u (.a(a[4*i+3:4*i]), .b(b[4*i+3:4*i]), .ci(c[i]), .s(s[4*i+3:4*i]), .co(c[i+1]));
    end
  endgenerate
  assign co = c[W/4];
endmodule

module adders #(parameter W = 16) (
  input clk, input rst, input [W-1:0] a, input [W-1:0] b, input ci,
  output reg [W:0] sum_ripple, output reg [W:0] sum_cla, output agree);
  wire [W-1:0] s1, s2;
  wire c1, c2;
  ripple_adder #(.W(W)) ripple (.a(a), .b(b), .ci(ci), .s(s1), .co(c1));
  cla_adder #(.W(W)) cla (.a(a), .b(b), .ci(ci), .s(s2), .co(c2));
  always @(posedge clk or posedge rst)
    if (rst) begin
      sum_ripple <= 0;
      sum_cla <= 0;
    end else begin
      sum_ripple <= {c1, s1};
      sum_cla <= {c2, s2};
    end
  assign agree = sum_ripple == sum_cla;
endmodule
