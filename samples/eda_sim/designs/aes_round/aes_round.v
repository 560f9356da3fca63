// aes_round: an AES-like 4-round cipher pipeline on a 32-bit state (8 nibbles), one round per stage.
// A round substitutes every nibble through a 4-bit S-box (a function, so yosys names its locals
// after the source file), rotates the nibble columns (ShiftRows-like), mixes the bytes with rotated
// copies of themselves (MixColumns-like) and adds a round key; a key schedule stage beside each
// round derives the next round key. in_valid travels with the data; out_valid marks a result.
module aes_round (
  input clk,
  input rst,
  input in_valid,
  input [31:0] data_in,
  input [31:0] key_in,
  output [31:0] data_out,
  output out_valid
);
  wire [31:0] d0 = data_in ^ key_in;
  wire [31:0] d1, d2, d3, d4, k1, k2, k3, k4;
  wire v1, v2, v3, v4;
  aes_stage #(.RC(8'h01)) s1 (.clk(clk), .rst(rst), .vi(in_valid), .di(d0), .ki(key_in), .vo(v1), .dout(d1), .ko(k1));
  aes_stage #(.RC(8'h02)) s2 (.clk(clk), .rst(rst), .vi(v1), .di(d1), .ki(k1), .vo(v2), .dout(d2), .ko(k2));
  aes_stage #(.RC(8'h04)) s3 (.clk(clk), .rst(rst), .vi(v2), .di(d2), .ki(k2), .vo(v3), .dout(d3), .ko(k3));
  aes_stage #(.RC(8'h08)) s4 (.clk(clk), .rst(rst), .vi(v3), .di(d3), .ki(k3), .vo(v4), .dout(d4), .ko(k4));
  assign data_out = d4;
  assign out_valid = v4;
endmodule

module aes_stage #(parameter [7:0] RC = 8'h01) (
  input clk, input rst, input vi, input [31:0] di, input [31:0] ki,
  output reg vo, output reg [31:0] dout, output reg [31:0] ko
);
  function [3:0] sbox;  // a 4-bit bijective S-box
    input [3:0] x;
    reg [3:0] y;
    begin
      case (x)
        4'h0: y = 4'hc; 4'h1: y = 4'h5; 4'h2: y = 4'h6; 4'h3: y = 4'hb;
        4'h4: y = 4'h9; 4'h5: y = 4'h0; 4'h6: y = 4'ha; 4'h7: y = 4'hd;
        4'h8: y = 4'h3; 4'h9: y = 4'he; 4'ha: y = 4'hf; 4'hb: y = 4'h8;
        4'hc: y = 4'h4; 4'hd: y = 4'h7; 4'he: y = 4'h1; default: y = 4'h2;
      endcase
      sbox = y;
    end
  endfunction

  reg [31:0] sub, shifted, mixed, next_key;
  integer i;
  always @(*) begin
    for (i = 0; i < 8; i = i + 1) sub[4*i +: 4] = sbox(di[4*i +: 4]);
    // ShiftRows-like: the high nibble of byte b moves to byte (b+1) mod 4.
    for (i = 0; i < 4; i = i + 1) begin
      shifted[8*i +: 4] = sub[8*i +: 4];
      shifted[8*((i + 1) % 4) + 4 +: 4] = sub[8*i + 4 +: 4];
    end
    mixed = shifted ^ {shifted[23:0], shifted[31:24]} ^ {shifted[15:0], shifted[31:16]};
    next_key = {ki[23:0], ki[31:24]} ^ {24'd0, sbox(ki[31:28]), sbox(ki[27:24])} ^ {RC, 24'd0} ^ ki;
  end

  always @(posedge clk) begin
    if (rst) begin
      vo <= 1'b0;
      dout <= 32'd0;
      ko <= 32'd0;
    end else begin
      vo <= vi;
      if (vi) begin
        dout <= mixed ^ next_key;
        ko <= next_key;
      end
    end
  end
endmodule
