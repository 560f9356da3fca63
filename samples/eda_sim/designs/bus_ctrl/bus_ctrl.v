// bus_ctrl: a two-master bus controller: a round-robin arbiter, an address decoder and three
// slaves (a register bank, a loadable counter, a scratch RAM). A request is served in one cycle:
// ack for a mapped address, err for an unmapped one. Built with include files: bus_defs.vh through
// -I include/, bus_local.vh beside this file; -D BUS_PARITY adds an even-parity output over rdata;
// -P COUNT_STEP=N sets the counter's step.
`include "bus_defs.vh"
`include "bus_local.vh"

module bus_ctrl #(parameter COUNT_STEP = 1) (
  input clk,
  input rst,
  input m0_req, input m0_we, input [`BUS_AW-1:0] m0_addr, input [`BUS_DW-1:0] m0_wdata,
  input m1_req, input m1_we, input [`BUS_AW-1:0] m1_addr, input [`BUS_DW-1:0] m1_wdata,
  output reg [1:0] grant,
  output reg ack,
  output reg err,
  output reg [`BUS_DW-1:0] rdata
`ifdef BUS_PARITY
  , output parity
`endif
);
  wire [1:0] g;
  bus_arbiter arb (.clk(clk), .rst(rst), .req({m1_req, m0_req}), .grant(g));
  wire sel1 = g == `GRANT_M1;
  wire req = g != `GRANT_NONE;
  wire we = sel1 ? m1_we : m0_we;
  wire [`BUS_AW-1:0] addr = sel1 ? m1_addr : m0_addr;
  wire [`BUS_DW-1:0] wdata = sel1 ? m1_wdata : m0_wdata;
  wire [2:0] region = addr[7:5];

  reg [`BUS_DW-1:0] regs [0:3];
  reg [`BUS_DW-1:0] ram [0:7];
  reg [`BUS_DW-1:0] count;
  integer i;
  initial for (i = 0; i < 8; i = i + 1) ram[i] = 16'h0;

  always @(posedge clk) begin
    if (rst) begin
      grant <= `GRANT_NONE;
      ack <= 1'b0;
      err <= 1'b0;
      rdata <= 16'd0;
      count <= 16'd0;
      for (i = 0; i < 4; i = i + 1) regs[i] <= 16'd0;
    end else begin
      grant <= g;
      ack <= 1'b0;
      err <= 1'b0;
      count <= count + COUNT_STEP;
      if (req) begin
        case (region)
          `REGS_BASE: begin
            ack <= 1'b1;
            if (we) regs[addr[1:0]] <= wdata;
            else rdata <= regs[addr[1:0]];
          end
          `COUNT_BASE: begin
            ack <= 1'b1;
            if (we) count <= wdata;
            else rdata <= count;
          end
          `RAM_BASE: begin
            ack <= 1'b1;
            if (we) ram[addr[2:0]] <= wdata;
            else rdata <= ram[addr[2:0]];
          end
          default: err <= 1'b1;
        endcase
      end
    end
  end
`ifdef BUS_PARITY
  assign parity = ^rdata;
`endif
endmodule

// Round-robin between two masters: when both request, the one not served last wins.
module bus_arbiter (input clk, input rst, input [1:0] req, output [1:0] grant);
  reg last;  // 1: m1 was served last
  assign grant = req == 2'b11 ? (last ? `GRANT_M0 : `GRANT_M1) : req == 2'b01 ? `GRANT_M0 :
                 req == 2'b10 ? `GRANT_M1 : `GRANT_NONE;
  always @(posedge clk)
    if (rst) last <= 1'b0;
    else if (grant != `GRANT_NONE) last <= grant == `GRANT_M1;
endmodule
