#!/usr/bin/env python3
"""Assembles program.s (the RV32I subset rv_soc runs) into program.hex for $readmemh.

    python3 asm.py program.s > program.hex

One instruction per line: `op rd, rs1, rs2|imm`, `lw rd, imm(rs1)`, `sw rs2, imm(rs1)`,
`beq rs1, rs2, label`, `jal rd, label`, `jalr rd, imm(rs1)`, `lui rd, imm`; `label:` lines; `#`
comments. Registers x0..x7. The ROM holds 64 words; the rest is filled with zeros (no-ops).
"""
import re
import sys

OP = {"add": (0, 0), "sub": (0, 0x20), "sll": (1, 0), "slt": (2, 0), "sltu": (3, 0), "xor": (4, 0),
      "srl": (5, 0), "sra": (5, 0x20), "or": (6, 0), "and": (7, 0)}
OPI = {"addi": 0, "slti": 2, "sltiu": 3, "xori": 4, "ori": 6, "andi": 7, "slli": 1, "srli": 5, "srai": 5}
BR = {"beq": 0, "bne": 1, "blt": 4, "bge": 5, "bltu": 6, "bgeu": 7}


def reg(t):
    m = re.fullmatch(r"x([0-7])", t)
    if not m:
        raise SystemExit(f"bad register {t!r} (x0..x7)")
    return int(m.group(1))


def main(path):
    lines = []
    for raw in open(path):
        line = raw.split("#")[0].strip()
        if line:
            lines.append(line)
    labels, pc = {}, 0
    for line in lines:
        if line.endswith(":"):
            labels[line[:-1]] = pc
        else:
            pc += 4
    words, pc = [], 0
    for line in lines:
        if line.endswith(":"):
            continue
        op, _, rest = line.partition(" ")
        a = [t.strip() for t in rest.split(",")]
        if op in OP:
            f3, f7 = OP[op]
            w = (f7 << 25) | (reg(a[2]) << 20) | (reg(a[1]) << 15) | (f3 << 12) | (reg(a[0]) << 7) | 0b0110011
        elif op in OPI:
            imm = int(a[2], 0)
            if op == "srai":
                imm |= 0x400
            w = ((imm & 0xfff) << 20) | (reg(a[1]) << 15) | (OPI[op] << 12) | (reg(a[0]) << 7) | 0b0010011
        elif op in ("lw", "jalr", "sw"):
            m = re.fullmatch(r"(-?\w+)\((x[0-7])\)", a[1])
            imm, base = int(m.group(1), 0), reg(m.group(2))
            if op == "sw":
                w = (((imm >> 5) & 0x7f) << 25) | (reg(a[0]) << 20) | (base << 15) | (2 << 12) | ((imm & 0x1f) << 7) | 0b0100011
            else:
                opc, f3 = (0b0000011, 2) if op == "lw" else (0b1100111, 0)
                w = ((imm & 0xfff) << 20) | (base << 15) | (f3 << 12) | (reg(a[0]) << 7) | opc
        elif op in BR:
            off = labels[a[2]] - pc
            w = ((((off >> 12) & 1) << 31) | (((off >> 5) & 0x3f) << 25) | (reg(a[1]) << 20) | (reg(a[0]) << 15) |
                 (BR[op] << 12) | (((off >> 1) & 0xf) << 8) | (((off >> 11) & 1) << 7) | 0b1100011)
        elif op == "jal":
            off = labels[a[1]] - pc
            w = ((((off >> 20) & 1) << 31) | (((off >> 1) & 0x3ff) << 21) | (((off >> 11) & 1) << 20) |
                 (((off >> 12) & 0xff) << 12) | (reg(a[0]) << 7) | 0b1101111)
        elif op == "lui":
            w = ((int(a[1], 0) & 0xfffff) << 12) | (reg(a[0]) << 7) | 0b0110111
        else:
            raise SystemExit(f"unknown instruction {line!r}")
        words.append(w & 0xffffffff)
        pc += 4
    if len(words) > 64:
        raise SystemExit(f"{len(words)} instructions; the ROM holds 64")
    for w in words + [0] * (64 - len(words)):
        print(f"{w:08x}")


if __name__ == "__main__":
    main(sys.argv[1])
