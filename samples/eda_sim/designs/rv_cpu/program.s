# rv_soc's demo program: mixes the input port into a checksum, keeps a running sum per slot of the
# data RAM, and writes the slot's value to the output port. Calls a subroutine with jal/jalr.
    addi x2, x0, 256       # x2 = I/O base (0x100)
    addi x1, x0, 0         # x1 = checksum
    addi x3, x0, 0         # x3 = iteration
loop:
    lw   x4, 0(x2)         # x4 = in_port
    add  x1, x1, x4
    jal  x7, mix           # x1 = mix(x1)
    andi x6, x3, 15
    slli x6, x6, 2         # x6 = slot address
    lw   x5, 0(x6)
    add  x5, x5, x1
    sw   x5, 0(x6)
    sw   x5, 4(x2)         # out_port = slot value
    addi x3, x3, 1
    andi x4, x4, 3
    beq  x4, x0, even
    blt  x1, x0, neg
    sub  x1, x1, x3
    jal  x0, loop
neg:
    sra  x1, x1, x4
    jal  x0, loop
even:
    lui  x5, 0x9e378
    xor  x1, x1, x5
    bgeu x1, x5, loop
    sltu x5, x1, x3
    or   x1, x1, x5
    jal  x0, loop
mix:
    slli x5, x1, 5
    xor  x1, x1, x5
    srli x5, x1, 11
    xor  x1, x1, x5
    slt  x5, x1, x0
    add  x1, x1, x5
    jalr x0, 0(x7)
