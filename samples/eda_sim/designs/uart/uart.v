// uart: an 8N1 UART with an active-low asynchronous reset (rst_n), a transmitter, a receiver with a
// 2-flop synchroniser, start-bit glitch rejection and framing-error detection, and a loopback mode
// (loopback = 1 feeds tx back into the receiver, so a held loopback checks a whole round trip).
// DIV clocks per bit; the receiver samples in the middle of each bit.
module uart #(parameter DIV = 4) (
  input clk,
  input rst_n,
  input tx_start,
  input [7:0] tx_data,
  input rx,
  input loopback,
  output tx,
  output tx_busy,
  output [7:0] rx_data,
  output rx_valid,
  output rx_error,
  output [7:0] rx_count
);
  wire rx_line = loopback ? tx : rx;
  uart_tx #(.DIV(DIV)) t (.clk(clk), .rst_n(rst_n), .start(tx_start), .data(tx_data), .tx(tx), .busy(tx_busy));
  uart_rx #(.DIV(DIV)) r (.clk(clk), .rst_n(rst_n), .rx(rx_line), .data(rx_data), .valid(rx_valid),
                          .error(rx_error), .count(rx_count));
endmodule

module uart_tx #(parameter DIV = 4) (
  input clk, input rst_n, input start, input [7:0] data,
  output reg tx, output busy
);
  reg [9:0] shift;  // stop, data, start: LSB goes first
  reg [3:0] bits;
  reg [7:0] tick;
  assign busy = bits != 4'd0;
  always @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      tx <= 1'b1;
      shift <= 10'h3ff;
      bits <= 4'd0;
      tick <= 8'd0;
    end else if (!busy) begin
      if (start) begin
        shift <= {1'b1, data, 1'b0};
        bits <= 4'd10;
        tick <= 8'd0;
      end
    end else if (tick == DIV - 1) begin
      tick <= 8'd0;
      tx <= shift[0];
      shift <= {1'b1, shift[9:1]};
      bits <= bits - 4'd1;
    end else begin
      tick <= tick + 8'd1;
    end
  end
endmodule

module uart_rx #(parameter DIV = 4) (
  input clk, input rst_n, input rx,
  output reg [7:0] data, output reg valid, output reg error, output reg [7:0] count
);
  reg [1:0] sync;
  wire line = sync[1];
  reg [1:0] state;  // 0 idle, 1 start, 2 data, 3 stop
  reg [7:0] tick;
  reg [2:0] bitn;
  reg [7:0] shift;
  localparam IDLE = 2'd0, START = 2'd1, DATA = 2'd2, STOP = 2'd3;
  always @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      sync <= 2'b11;
      state <= IDLE;
      tick <= 8'd0;
      bitn <= 3'd0;
      shift <= 8'd0;
      data <= 8'd0;
      valid <= 1'b0;
      error <= 1'b0;
      count <= 8'd0;
    end else begin
      sync <= {sync[0], rx};
      valid <= 1'b0;
      case (state)
        IDLE: if (!line) begin state <= START; tick <= 8'd0; end
        START:
          if (tick == DIV / 2 - 1) begin
            tick <= 8'd0;
            if (line) state <= IDLE;  // a glitch, not a start bit
            else begin state <= DATA; bitn <= 3'd0; end
          end else tick <= tick + 8'd1;
        DATA:
          if (tick == DIV - 1) begin
            tick <= 8'd0;
            shift <= {line, shift[7:1]};
            bitn <= bitn + 3'd1;
            if (bitn == 3'd7) state <= STOP;
          end else tick <= tick + 8'd1;
        STOP:
          if (tick == DIV - 1) begin
            tick <= 8'd0;
            state <= IDLE;
            if (line) begin
              data <= shift;
              valid <= 1'b1;
              count <= count + 8'd1;
            end else error <= 1'b1;
          end else tick <= tick + 8'd1;
      endcase
    end
  end
endmodule
