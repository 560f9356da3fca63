// A register file (R registers of W bits, two read ports, one write port, synchronous reset) feeding
// an ALU whose result is written back. Each cycle: rd <= alu(op, rs1, rs2 or imm) when we.
module regfile #(parameter W = 16, parameter R = 8, parameter A = 3) (
  input clk, input rst, input we, input [A-1:0] wa, input [W-1:0] wd,
  input [A-1:0] ra1, input [A-1:0] ra2, output [W-1:0] rd1, output [W-1:0] rd2);
  reg [W-1:0] regs [0:R-1];
  integer i;
  always @(posedge clk)
    if (rst) begin
      for (i = 0; i < R; i = i + 1) regs[i] <= i * 16'h1111;
    end else if (we) begin
      regs[wa] <= wd;
    end
  assign rd1 = regs[ra1];
  assign rd2 = regs[ra2];
endmodule

module shifter #(parameter W = 16) (input [W-1:0] a, input [3:0] amount, input right, output [W-1:0] y);
  assign y = right ? a >> amount : a << amount;
endmodule

module alu #(parameter W = 16) (input [2:0] op, input [W-1:0] a, input [W-1:0] b,
                                output reg [W-1:0] y, output zero, output carry);
  wire [W-1:0] sh;
  wire [W:0] sum = {1'b0, a} + {1'b0, b};
  wire [W:0] diff = {1'b0, a} - {1'b0, b};
  shifter #(.W(W)) shift (.a(a), .amount(b[3:0]), .right(op[0]), .y(sh));
  always @* begin
    case (op)
      3'd0: y = sum[W-1:0];
      3'd1: y = diff[W-1:0];
      3'd2: y = a & b;
      3'd3: y = a | b;
      3'd4: y = a ^ b;
      3'd5: y = {{(W-1){1'b0}}, a < b};
      3'd6: y = sh;
      default: y = sh;
    endcase
  end
  assign zero = y == 0;
  assign carry = op == 3'd1 ? diff[W] : sum[W];
endmodule

module alu_regfile (input clk, input rst, input we, input use_imm, input [2:0] op,
                    input [2:0] rd, input [2:0] rs1, input [2:0] rs2, input [15:0] imm,
                    output [15:0] result, output reg [1:0] flags, output [15:0] peek);
  wire [15:0] a, b;
  regfile #(.W(16), .R(8), .A(3)) rf (.clk(clk), .rst(rst), .we(we), .wa(rd), .wd(result),
                                      .ra1(rs1), .ra2(rs2), .rd1(a), .rd2(b));
  wire zero, carry;
  alu #(.W(16)) u_alu (.op(op), .a(a), .b(use_imm ? imm : b), .y(result), .zero(zero), .carry(carry));
  always @(posedge clk or posedge rst)
    if (rst) flags <= 2'b00;
    else flags <= {zero, carry};
  assign peek = b;
endmodule
