; @header cart=0x00 rom=0x00 ram=0x00 title=CPU_CB
; cpu_cb.s: every CB-prefixed opcode (256), on every register and (HL).
;
; One pass:
;  - RLC RRC RL RR SLA SRA SWAP SRL on B C D E H L (HL) A: all 256 values x carry in 0/1
;    (F = 0x00 / 0xF0), mixing the result register and A/F into the checksum
;  - BIT/RES/SET 0-7 on B C D E H L (HL) A: 16 sample values, F = 0x50 (BIT keeps C, so the input
;    flags matter)
;  - known-answer self-checks (ids 1..), then end_pass (passes must agree on the checksum)
.include "include/header.inc"

.equ TMP, SCRATCH        ; the (HL) operand
.equ VAL, SCRATCH+1      ; value under test
.equ FIN, SCRATCH+2      ; flags in

; Load VAL into every register (HL -> TMP holding VAL, or H/L = VAL), F = FIN, run \op \reg,
; mix the result register, then A and F.
.macro CBT op, reg
  ld a,(FIN)
  ld c,a
  ld a,(VAL)
  ld b,a
  push bc
  pop af
  ld b,a
  ld c,a
  ld d,a
  ld e,a
  ld hl,TMP
  ld (hl),a
  .ifc \reg,h
  ld h,a
  .endif
  .ifc \reg,l
  ld l,a
  .endif
  \op \reg
  push af
  ld a,\reg
  call mix_a
  pop af
  call mix_af
.endm

.macro CBN op, reg
  .irp n, 0,1,2,3,4,5,6,7
  CBT "\op \n,", \reg
  .endr
.endm

main:
pass:
  ; shifts and rotates: VAL 0..255 x FIN in {0x00, 0xF0}
  xor a
  ld (VAL),a
1:
  xor a
  ld (FIN),a
2:
  call shifts
  ld a,(FIN)
  add a,0xF0
  ld (FIN),a
  jr nc,2b
  ld a,(VAL)
  inc a
  ld (VAL),a
  jr nz,1b
  ; BIT/RES/SET over 16 sample values
  ld a,0x50
  ld (FIN),a
  ld hl,samples
3:
  ld a,(hl+)
  ld (VAL),a
  push hl
  call bitops
  pop hl
  ld a,l
  cp (samples_end) & 0xFF
  jr nz,3b
  call checks
  call end_pass
  jp pass

shifts:
  .irp op, rlc,rrc,rl,rr,sla,sra,swap,srl
  .irp r, b,c,d,e,h,l,(hl),a
  CBT \op, \r
  .endr
  .endr
  ret

bitops:
  .irp op, bit,res,set
  .irp r, b,c,d,e,h,l,(hl),a
  CBN \op, \r
  .endr
  .endr
  ret

; KB: VAL = \v, F = \f, \insn on register B; expect B = \rv and F = \rf (ids \id, \id+1).
.macro KB v, f, insn, rv, rf, id
  ld b,\v
  ld c,\f
  push bc
  pop af
  \insn
  push af
  ld a,b
  ld b,\rv
  ld c,\id
  call expect
  pop de
  ld a,e
  ld b,\rf
  ld c,\id+1
  call expect
.endm

checks:
  KB 0xF0, 0xF0, "swap b", 0x0F, 0x00, 1
  KB 0x00, 0x00, "swap b", 0x00, 0x80, 3
  KB 0x81, 0x00, "sra b", 0xC0, 0x10, 5
  KB 0x01, 0x00, "srl b", 0x00, 0x90, 7
  KB 0x80, 0x10, "bit 7,b", 0x80, 0x30, 9
  KB 0x80, 0x50, "bit 0,b", 0x80, 0xB0, 11
  KB 0x80, 0x00, "rl b", 0x00, 0x90, 13
  KB 0x00, 0x10, "rr b", 0x80, 0x00, 15
  KB 0x00, 0xF0, "rlc b", 0x00, 0x80, 17
  KB 0x01, 0x00, "rrc b", 0x80, 0x10, 19
  KB 0xFF, 0xF0, "res 7,b", 0x7F, 0xF0, 21
  KB 0x00, 0x00, "set 0,b", 0x01, 0x00, 23
  KB 0x80, 0x00, "sla b", 0x00, 0x90, 25
  ret

samples:
  .db 0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xFF, 0xFE, 0xFD, 0xFB, 0xF7, 0x5A, 0xA5
samples_end:
