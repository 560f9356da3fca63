// Found beside bus_ctrl.v (an include relative to the including file).
`define GRANT_NONE 2'b00
`define GRANT_M0 2'b01
`define GRANT_M1 2'b10
