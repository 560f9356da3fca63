// The demo design (>= 10k gates): T tiles on a registered ring. Each tile has the tiny CPU, an 8x8
// array multiplier, the ALU + register file and a FIFO from the other designs, so it is built from
//   soc/soc.v cpu/cpu.v multiplier/multiplier.v alu_regfile/alu_regfile.v fifo/fifo.v
// Tiles talk only through registered links, the usual shape of a chip's top level.
module tile (input clk, input rst, input [7:0] instr, input [15:0] link_in,
             output reg [15:0] link_out, output [7:0] status);
  wire [7:0] pc, acc, bus;
  wire taken;
  cpu core (.clk(clk), .rst(rst), .instr(instr ^ link_in[7:0]), .pc(pc), .acc(acc), .bus(bus), .taken(taken));

  wire [15:0] prod, prod_comb;
  multiplier #(.N(8)) mul (.clk(clk), .rst(rst), .x(acc), .y(link_in[15:8]), .product(prod),
                           .product_comb(prod_comb));

  wire [15:0] result, peek;
  wire [1:0] flags;
  alu_regfile arf (.clk(clk), .rst(rst), .we(taken | instr[0]), .use_imm(instr[1]), .op(instr[4:2]),
                   .rd(bus[2:0]), .rs1(bus[5:3]), .rs2(pc[2:0]), .imm(prod ^ peek), .result(result),
                   .flags(flags), .peek(peek));

  wire [7:0] dout, pushed_xor, popped_xor;
  wire full, empty;
  wire [3:0] count;
  fifo q (.clk(clk), .rst(rst), .push(instr[5]), .pop(instr[6]), .din(result[7:0] ^ prod_comb[7:0]),
          .dout(dout), .full(full), .empty(empty), .count(count), .pushed_xor(pushed_xor),
          .popped_xor(popped_xor));

  always @(posedge clk or posedge rst)
    if (rst) link_out <= 16'h0;
    else link_out <= {dout ^ pushed_xor, result[15:8] ^ popped_xor};
  assign status = {full, empty, flags, count};
endmodule

module soc #(parameter T = 4) (input clk, input rst, input [8*T-1:0] instr,
                               output [16*T-1:0] links, output [8*T-1:0] status);
  genvar i;
  generate
    for (i = 0; i < T; i = i + 1) begin : t
      tile u (.clk(clk), .rst(rst), .instr(instr[8*i +: 8]), .link_in(links[16*((i + T - 1) % T) +: 16]),
              .link_out(links[16*i +: 16]), .status(status[8*i +: 8]));
    end
  endgenerate
endmodule
