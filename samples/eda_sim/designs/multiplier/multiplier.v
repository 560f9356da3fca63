// An unsigned N x N array multiplier: rows of carry-save adders built from full adders, a ripple
// adder for the last row. Operands and product are registered (synchronous reset).
module mul_fa (input a, input b, input ci, output s, output co);
  assign s  = a ^ b ^ ci;
  assign co = (a & b) | (a & ci) | (b & ci);
endmodule

// One carry-save row: adds the partial product row pp to (sin, cin).
module csa_row #(parameter N = 8) (input [N-1:0] pp, input [N-1:0] sin, input [N-1:0] cin,
                                   output [N-1:0] s, output [N-1:0] c);
  genvar i;
  generate
    for (i = 0; i < N; i = i + 1) begin : col
      mul_fa fa (.a(pp[i]), .b(sin[i]), .ci(cin[i]), .s(s[i]), .co(c[i]));
    end
  endgenerate
endmodule

module array_mul #(parameter N = 8) (input [N-1:0] x, input [N-1:0] y, output [2*N-1:0] p);
  wire [N-1:0] s [0:N];
  wire [N-1:0] c [0:N];
  assign s[0] = {N{1'b0}};
  assign c[0] = {N{1'b0}};
  genvar r;
  generate
    for (r = 0; r < N; r = r + 1) begin : row
      wire [N-1:0] pp = x & {N{y[r]}};
      // Shift: the row's sum bit 0 is a product bit; the rest moves down one place.
      csa_row #(.N(N)) csa (.pp(pp), .sin(r == 0 ? {N{1'b0}} : {1'b0, s[r][N-1:1]}), .cin(c[r]),
                            .s(s[r+1]), .c(c[r+1]));
      assign p[r] = s[r+1][0];
    end
  endgenerate
  // Final carry-propagate addition of the last row.
  wire [N:0] carry;
  assign carry[0] = 1'b0;
  genvar k;
  generate
    for (k = 0; k < N; k = k + 1) begin : final_add
      mul_fa fa (.a(k == N-1 ? 1'b0 : s[N][k+1]), .b(c[N][k]), .ci(carry[k]), .s(p[N+k]), .co(carry[k+1]));
    end
  endgenerate
endmodule

module multiplier #(parameter N = 8) (input clk, input rst, input [N-1:0] x, input [N-1:0] y,
                                      output reg [2*N-1:0] product, output [2*N-1:0] product_comb);
  reg [N-1:0] xr, yr;
  array_mul #(.N(N)) mul (.x(xr), .y(yr), .p(product_comb));
  always @(posedge clk) begin
    if (rst) begin
      xr <= 0;
      yr <= 0;
      product <= 0;
    end else begin
      xr <= x;
      yr <= y;
      product <= product_comb;
    end
  end
endmodule
