// bus_ctrl's address map (found through -I samples/eda_sim/designs/bus_ctrl/include).
`ifndef BUS_DEFS_VH
`define BUS_DEFS_VH
`define BUS_AW 8
`define BUS_DW 16
`define REGS_BASE 3'b000   // 0x00..0x1f: 4 registers
`define COUNT_BASE 3'b001  // 0x20..0x3f: the free-running counter (write: load)
`define RAM_BASE 3'b010    // 0x40..0x5f: 8-word scratch RAM
`endif
