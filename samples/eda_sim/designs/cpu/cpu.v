// A tiny 8-bit CPU: 4 registers, an accumulator-style ALU, a program counter with conditional
// branches, and a data memory of 8 bytes. Instructions arrive on `instr` each cycle (the stimulus
// plays the instruction memory), so random stimulus exercises every opcode.
//   instr[7:5] opcode: 0 LI r,imm3   1 ADD r,s   2 SUB r,s   3 AND r,s   4 XOR r,s
//                      5 ST [imm3],r 6 LD r,[imm3]  7 BNZ r,imm3 (pc += imm3 + 1 when r != 0)
//   instr[4:3] register r; instr[2:1] register s; instr[2:0] imm3.
module cpu_decode (input [7:0] instr, output [2:0] opcode, output [1:0] r, output [1:0] s, output [2:0] imm,
                   output writes_reg, output is_store, output is_branch);
  assign opcode = instr[7:5];
  assign r = instr[4:3];
  assign s = instr[2:1];
  assign imm = instr[2:0];
  assign writes_reg = opcode != 3'd5 && opcode != 3'd7;
  assign is_store = opcode == 3'd5;
  assign is_branch = opcode == 3'd7;
endmodule

module cpu_regs (input clk, input rst, input we, input [1:0] wa, input [7:0] wd,
                 input [1:0] ra, input [1:0] rb, output [7:0] a, output [7:0] b);
  reg [7:0] r0, r1, r2, r3;
  always @(posedge clk or posedge rst)
    if (rst) begin
      r0 <= 8'h00; r1 <= 8'h01; r2 <= 8'h02; r3 <= 8'h03;
    end else if (we) begin
      case (wa)
        2'd0: r0 <= wd;
        2'd1: r1 <= wd;
        2'd2: r2 <= wd;
        default: r3 <= wd;
      endcase
    end
  assign a = ra == 0 ? r0 : ra == 1 ? r1 : ra == 2 ? r2 : r3;
  assign b = rb == 0 ? r0 : rb == 1 ? r1 : rb == 2 ? r2 : r3;
endmodule

module cpu_alu (input [2:0] opcode, input [7:0] a, input [7:0] b, input [2:0] imm, input [7:0] mem_data,
                output reg [7:0] y);
  always @* begin
    case (opcode)
      3'd0: y = {5'b0, imm};
      3'd1: y = a + b;
      3'd2: y = a - b;
      3'd3: y = a & b;
      3'd4: y = a ^ b;
      3'd6: y = mem_data;
      default: y = a;
    endcase
  end
endmodule

module cpu_dmem (input clk, input rst, input we, input [2:0] addr, input [7:0] wd, output [7:0] rd);
  reg [7:0] m [0:7];
  integer i;
  always @(posedge clk)
    if (rst) for (i = 0; i < 8; i = i + 1) m[i] <= 8'hA0 + i;
    else if (we) m[addr] <= wd;
  assign rd = m[addr];
endmodule

module cpu (input clk, input rst, input [7:0] instr, output reg [7:0] pc, output [7:0] acc,
            output [7:0] bus, output taken);
  wire [2:0] opcode, imm;
  wire [1:0] r, s;
  wire writes_reg, is_store, is_branch;
  wire [7:0] a, b, y, mem_data;
  cpu_decode dec (.instr(instr), .opcode(opcode), .r(r), .s(s), .imm(imm), .writes_reg(writes_reg),
                  .is_store(is_store), .is_branch(is_branch));
  cpu_regs regs (.clk(clk), .rst(rst), .we(writes_reg), .wa(r), .wd(y), .ra(r), .rb(s), .a(a), .b(b));
  cpu_alu alu (.opcode(opcode), .a(a), .b(b), .imm(imm), .mem_data(mem_data), .y(y));
  cpu_dmem dmem (.clk(clk), .rst(rst), .we(is_store), .addr(imm), .wd(a), .rd(mem_data));
  assign taken = is_branch && a != 0;
  always @(posedge clk or posedge rst)
    if (rst) pc <= 0;
    else pc <= taken ? pc + {5'b0, imm} + 8'd1 : pc + 8'd1;
  assign acc = a;
  assign bus = y;
endmodule
