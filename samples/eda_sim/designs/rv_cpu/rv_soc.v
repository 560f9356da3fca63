// rv_soc: a small RISC-V-like CPU running a program from a ROM loaded with $readmemh.
//
// The core executes an RV32I subset (LUI, JAL, JALR, BEQ/BNE/BLT/BGE/BLTU/BGEU, LW, SW, the OP and
// OP-IMM ALU instructions with shifts) in one cycle per instruction, with 8 registers (x0..x7: the
// low 3 bits of each register field). Around it: a 64-word program ROM (PROGRAM, $readmemh), a
// 16-word data RAM with initial contents (DATA, $readmemh), and memory-mapped I/O: a load from
// 0x100 reads `in_port`, a store to 0x104 writes `out_port`. The register file starts at zero
// through an `initial` loop (yosys `init` attributes), not through the reset.
module rv_soc #(parameter PROGRAM = "program.hex", parameter DATA = "data.hex") (
  input clk,
  input rst,
  input [15:0] in_port,
  output reg [31:0] out_port,
  output [7:0] pc_out,
  output [31:0] insn_out
);
  reg [31:0] rom [0:63];
  reg [31:0] ram [0:15];
  initial $readmemh(PROGRAM, rom);
  initial $readmemh(DATA, ram);

  reg [7:0] pc;  // word address
  wire [31:0] insn = rom[pc[5:0]];
  assign pc_out = pc;
  assign insn_out = insn;

  wire [31:0] rs1v, rs2v, result, addr, store_data;
  wire [7:0] next_pc;
  wire we_reg, we_mem;
  wire [2:0] rd;
  reg [31:0] load_data;

  rv_regs regs (.clk(clk), .ra(insn[17:15]), .rb(insn[22:20]), .wa(rd), .we(we_reg), .wd(result),
                .a(rs1v), .b(rs2v));
  rv_core core (.pc(pc), .insn(insn), .rs1v(rs1v), .rs2v(rs2v), .load_data(load_data), .rd(rd),
                .we_reg(we_reg), .result(result), .we_mem(we_mem), .addr(addr), .store_data(store_data),
                .next_pc(next_pc));

  always @(*) begin
    if (addr[8]) load_data = {16'd0, in_port};
    else load_data = ram[addr[5:2]];
  end

  always @(posedge clk) begin
    if (rst) begin
      pc <= 8'd0;
      out_port <= 32'd0;
    end else begin
      pc <= next_pc;
      if (we_mem && addr[8] && addr[2]) out_port <= store_data;
      if (we_mem && !addr[8]) ram[addr[5:2]] <= store_data;
    end
  end
endmodule

// 8 x 32 register file, two read ports, x0 reads as zero. No reset: it starts at zero.
module rv_regs (
  input clk,
  input [2:0] ra, rb, wa,
  input we,
  input [31:0] wd,
  output [31:0] a, b
);
  reg [31:0] r [1:7];
  integer i;
  initial for (i = 1; i < 8; i = i + 1) r[i] = 32'd0;
  assign a = ra == 3'd0 ? 32'd0 : r[ra];
  assign b = rb == 3'd0 ? 32'd0 : r[rb];
  always @(posedge clk)
    if (we && wa != 3'd0) r[wa] <= wd;
endmodule

// Decode, ALU, branch and address computation: purely combinational.
module rv_core (
  input [7:0] pc,
  input [31:0] insn,
  input [31:0] rs1v, rs2v, load_data,
  output [2:0] rd,
  output reg we_reg,
  output reg [31:0] result,
  output reg we_mem,
  output [31:0] addr,
  output [31:0] store_data,
  output reg [7:0] next_pc
);
  wire [6:0] opcode = insn[6:0];
  wire [2:0] f3 = insn[14:12];
  wire alt = insn[30];
  assign rd = insn[9:7];
  wire [31:0] imm_i = {{20{insn[31]}}, insn[31:20]};
  wire [31:0] imm_s = {{20{insn[31]}}, insn[31:25], insn[11:7]};
  wire [31:0] imm_b = {{19{insn[31]}}, insn[31], insn[7], insn[30:25], insn[11:8], 1'b0};
  wire [31:0] imm_j = {{11{insn[31]}}, insn[31], insn[19:12], insn[20], insn[30:21], 1'b0};
  wire [31:0] imm_u = {insn[31:12], 12'd0};
  wire [31:0] pc_bytes = {22'd0, pc, 2'b00};
  wire [31:0] pc_plus4 = pc_bytes + 32'd4;

  wire is_op = opcode == 7'b0110011;
  wire [31:0] operand_b = is_op ? rs2v : imm_i;
  wire [4:0] shamt = operand_b[4:0];
  reg [31:0] alu;
  always @(*) begin
    case (f3)
      3'b000: alu = (is_op && alt) ? rs1v - operand_b : rs1v + operand_b;
      3'b001: alu = rs1v << shamt;
      3'b010: alu = {31'd0, $signed(rs1v) < $signed(operand_b)};
      3'b011: alu = {31'd0, rs1v < operand_b};
      3'b100: alu = rs1v ^ operand_b;
      3'b101: alu = alt ? $unsigned($signed(rs1v) >>> shamt) : rs1v >> shamt;
      3'b110: alu = rs1v | operand_b;
      default: alu = rs1v & operand_b;
    endcase
  end

  reg taken;
  always @(*) begin
    case (f3)
      3'b000: taken = rs1v == rs2v;
      3'b001: taken = rs1v != rs2v;
      3'b100: taken = $signed(rs1v) < $signed(rs2v);
      3'b101: taken = $signed(rs1v) >= $signed(rs2v);
      3'b110: taken = rs1v < rs2v;
      3'b111: taken = rs1v >= rs2v;
      default: taken = 1'b0;
    endcase
  end

  assign addr = rs1v + (opcode == 7'b0100011 ? imm_s : imm_i);
  assign store_data = rs2v;
  wire [31:0] branch_target = pc_bytes + imm_b;
  wire [31:0] jal_target = pc_bytes + imm_j;
  wire [31:0] jalr_target = rs1v + imm_i;

  always @(*) begin
    we_reg = 1'b0;
    we_mem = 1'b0;
    result = alu;
    next_pc = pc_plus4[9:2];
    case (opcode)
      7'b0110111: begin we_reg = 1'b1; result = imm_u; end                                  // LUI
      7'b1101111: begin we_reg = 1'b1; result = pc_plus4; next_pc = jal_target[9:2]; end  // JAL
      7'b1100111: begin we_reg = 1'b1; result = pc_plus4; next_pc = jalr_target[9:2]; end // JALR
      7'b1100011: if (taken) next_pc = branch_target[9:2];                                 // branches
      7'b0000011: begin we_reg = 1'b1; result = load_data; end                             // LW
      7'b0100011: we_mem = 1'b1;                                                           // SW
      7'b0010011, 7'b0110011: we_reg = 1'b1;                                               // ALU
      default: ;                                                                           // others: no-op
    endcase
  end
endmodule
