; @header cart=0x00 rom=0x00 ram=0x00 title=CPU_ALU
; cpu_alu.s: 8/16-bit arithmetic and logic, flags in and out.
;
; One pass = sweeps whose results (A and F after every instruction) go into the running
; checksum (RES_CHK, see include/lib.inc), then known-answer self-checks (RES_FAILS, ids below),
; then end_pass (passes must agree on the checksum). The pass loops forever.
;  - ADD/ADC/SUB/SBC/AND/XOR/OR/CP r and (HL): all 256 A x 16 operands (ADC/SBC with carry
;    in clear and set, the others with one flag input each); immediate forms in the self-checks
;  - DAA: all 256 A x all 16 flag nibbles; CPL, SCF, CCF, RLCA, RLA, RRCA, RRA, INC/DEC A,
;    INC/DEC B, INC/DEC (HL): all 256 A x flags 0x00/0x50/0xA0/0xF0
;  - the 64 ALU register forms (B C D E H L (HL) A) over 16 x 16 operand pairs; INC/DEC on
;    every register over all 256 values
;  - ADD HL,BC/DE/HL/SP, ADD SP,e, LD HL,SP+e, INC/DEC rr (incl. SP): 16-bit operand tables
;  - PUSH/POP AF (F low nibble masked)
.include "include/header.inc"

.equ TMP, SCRATCH          ; u8 memory operand for the (HL) forms
.equ SAVE_SP, SCRATCH+2    ; u16
.equ SP_RES, SCRATCH+4     ; u16 SP after ADD SP,e
.equ VAL_A, SCRATCH+6     ; A operand of REGOP
.equ VAL_B, SCRATCH+7     ; register operand
.equ FIN, SCRATCH+8       ; flags in

; Binary-op sweep: D = A (0..255) x operand B from `operands` x F = \fin; \insn does the op.
.macro BINOP insn, fin
  ld d,0
10:
  ld hl,operands
11:
  ld b,(hl)
  ld e,\fin
  push de
  pop af
  \insn
  call mix_af
  inc hl
  ld a,l
  and 0x0F
  jr nz,11b
  inc d
  jr nz,10b
.endm

.macro BINOP2 insn
  BINOP "\insn", 0x00
  BINOP "\insn", 0xF0
.endm

; Unary sweep: A = D (0..255) x F = E stepping by \step from 0x00 (0x10: all 16 flag nibbles;
; 0x50: 0x00, 0x50, 0xA0, 0xF0, i.e. every flag both clear and set).
.macro UNARY insn, step
  ld d,0
10:
  ld e,0
11:
  push de
  pop af
  \insn
  call mix_af
  ld a,e
  add a,\step
  ld e,a
  jr nc,11b
  inc d
  jr nz,10b
.endm

; Known answer: run with A = \a, F = \f; expect A = \ra, F = \rf; ids \id (A) and \id+1 (F).
.macro KA a, f, insn, ra, rf, id
  ld d,\a
  ld e,\f
  push de
  pop af
  \insn
  push af
  ld b,\ra
  ld c,\id
  call expect
  pop de
  ld a,e
  ld b,\rf
  ld c,\id+1
  call expect
.endm

; One SP-relative op with SP = 0xD000 + D; mixes HL, F and the SP after the op.
.macro SPOP insn
  ld h,0xD0
  ld l,d
  ld sp,hl
  ld hl,0
  \insn
  push af
  pop bc
  ld (SP_RES),sp
  ld sp,0xDF00
  call mix_hl
  ld a,c
  call mix_a
  ld hl,SP_RES
  ld a,(hl+)
  call mix_a
  ld a,(hl)
  call mix_a
.endm

; Register-operand forms: A = (VAL_A), every other register = (VAL_B) (HL -> TMP = VAL_B, or
; H/L = VAL_B themselves), F = (FIN); then \op A,\reg and mix A/F.
.macro REGOP op, reg
  call regs_from_vals
  .ifc \reg,h
  ld h,a
  .endif
  .ifc \reg,l
  ld l,a
  .endif
  ld a,(VAL_A)
  .ifc \op,add
  add a,\reg
  .endif
  .ifc \op,adc
  adc a,\reg
  .endif
  .ifc \op,sub
  sub a,\reg
  .endif
  .ifc \op,sbc
  sbc a,\reg
  .endif
  .ifc \op,and
  and \reg
  .endif
  .ifc \op,xor
  xor \reg
  .endif
  .ifc \op,or
  or \reg
  .endif
  .ifc \op,cp
  cp \reg
  .endif
  call mix_af
.endm

; INC/DEC r: every register = (VAL_B), F = (FIN); mixes A/F and the register.
.macro INCDEC op, reg
  call regs_from_vals
  .ifc \reg,h
  ld h,a
  .endif
  .ifc \reg,l
  ld l,a
  .endif
  \op \reg
  call mix_af
  push af
  ld a,\reg
  call mix_a
  pop af
.endm

main:
pass:
  BINOP "add a,b", 0xF0
  BINOP2 "adc a,b"
  BINOP "sub a,b", 0x50
  BINOP2 "sbc a,b"
  BINOP "and b", 0x50
  BINOP "xor b", 0xA0
  BINOP "or b", 0xF0
  BINOP "cp b", 0x00
  BINOP "call adc_mem", 0xF0
  BINOP "call sbc_mem", 0x10
  BINOP "call cp_mem", 0x00
  BINOP "call and_c", 0x00
  UNARY daa, 0x10
  UNARY cpl, 0x50
  UNARY scf, 0x50
  UNARY ccf, 0x50
  UNARY rlca, 0x50
  UNARY rla, 0x50
  UNARY rrca, 0x50
  UNARY rra, 0x50
  UNARY "inc a", 0x50
  UNARY "dec a", 0x50
  UNARY "call inc_b", 0x50
  UNARY "call dec_b", 0x50
  UNARY "call inc_mem", 0x50
  UNARY "call dec_mem", 0x50
  call regops
  call incdecs
  call sweep16
  call checks
  call end_pass
  jp pass

adc_mem:
  push hl
  ld hl,TMP
  ld (hl),b
  adc a,(hl)
  pop hl
  ret
sbc_mem:
  push hl
  ld hl,TMP
  ld (hl),b
  sbc a,(hl)
  pop hl
  ret
cp_mem:
  push hl
  ld hl,TMP
  ld (hl),b
  cp (hl)
  pop hl
  ret
and_c:
  ld c,b
  and c
  ret
inc_b:
  ld b,a
  inc b
  ld a,b
  ret
dec_b:
  ld b,a
  dec b
  ld a,b
  ret
inc_mem:
  ld hl,TMP
  ld (hl),a
  inc (hl)
  ld a,(hl)
  ret
dec_mem:
  ld hl,TMP
  ld (hl),a
  dec (hl)
  ld a,(hl)
  ret

; 16-bit sweeps over words16 x words16 (and offsets8 for SP+e), flags in 0x00 and 0xF0.
sweep16:
  ld hl,words16
1:
  ld a,(hl+)
  ld c,a
  ld a,(hl+)
  ld b,a                 ; BC = first operand
  push hl
  ld hl,words16
2:
  ld a,(hl+)
  ld e,a
  ld a,(hl+)
  ld d,a                 ; DE = second operand
  push hl
  ; ADD HL,DE with F = 0x00 and F = 0xF0 (Z must be kept)
  ld h,b
  ld l,c
  push hl
  ld hl,0x0000
  push hl
  pop af
  pop hl
  add hl,de
  call mix_af
  call mix_hl
  ld h,b
  ld l,c
  push hl
  ld hl,0xFFF0
  push hl
  pop af
  pop hl
  add hl,de
  call mix_af
  call mix_hl
  ; ADD HL,BC and ADD HL,HL
  ld h,d
  ld l,e
  add hl,bc
  call mix_af
  call mix_hl
  ld h,d
  ld l,e
  add hl,hl
  call mix_af
  call mix_hl
  ; INC/DEC rr (no flags)
  ld h,d
  ld l,e
  dec hl
  call mix_hl
  inc hl
  inc hl
  call mix_hl
  inc de
  call mix_de
  dec bc
  dec bc
  call mix_bc
  inc bc
  inc bc
  dec de
  pop hl
  ld a,l
  cp (words16_end) & 0xFF
  jr nz,2b
  pop hl
  ld a,l
  cp (words16_end) & 0xFF
  jr nz,1b
  ; ADD SP,e and LD HL,SP+e: SP = 0xD0xx for every low byte xx (the flags come from the low
  ; byte; the high byte shows the carry into it). Results are pushed/stored while SP points into
  ; WRAM 0xCF7E-0xD17F; mixing runs on a scratch stack at 0xDF00, below the real one.
  ld (SAVE_SP),sp
  ld d,0
5:
  SPOP "ldhl sp,1"
  SPOP "ldhl sp,-1"
  SPOP "ldhl sp,127"
  SPOP "ldhl sp,-128"
  SPOP "ldhl sp,0x0F"
  SPOP "ldhl sp,-0x10"
  SPOP "add sp,1"
  SPOP "add sp,-1"
  SPOP "add sp,127"
  SPOP "add sp,-128"
  SPOP "add sp,0x10"
  SPOP "add sp,-0x0F"
  SPOP "inc sp"
  SPOP "dec sp"
  ld a,(SAVE_SP)         ; ADD HL,SP with the real SP (0xDFFE here)
  ld l,a
  ld a,(SAVE_SP+1)
  ld h,a
  ld sp,hl
  ld h,0
  ld l,d
  add hl,sp
  call mix_af
  call mix_hl
  inc d
  jp nz,5b
  ret


ka_daa_add:
  add a,0x27
  daa
  ret
ka_daa_sub:
  sub a,0x01
  daa
  ret

; Known answers (hardware behaviour, which PyBoy 2.8.1 follows). Failure ids = the KA ids.
checks:
  KA 0x3A, 0x00, "add a,0xC6", 0x00, 0xB0, 1
  KA 0x15, 0x00, "call ka_daa_add", 0x42, 0x00, 3
  KA 0x00, 0x00, "sub a,0x01", 0xFF, 0x70, 5
  KA 0x10, 0x00, "cp 0x10", 0x10, 0xC0, 7
  KA 0xF0, 0x00, "and 0x0F", 0x00, 0xA0, 9
  KA 0x55, 0xF0, "xor a", 0x00, 0x80, 11
  KA 0xFF, 0x10, "inc a", 0x00, 0xB0, 13
  KA 0x10, 0x00, "dec a", 0x0F, 0x60, 15
  KA 0x80, 0x00, "rlca", 0x01, 0x10, 17
  KA 0x01, 0x80, "rra", 0x00, 0x10, 19
  KA 0x10, 0x00, "call ka_daa_sub", 0x09, 0x40, 21
  KA 0x00, 0x10, "sbc a,0x00", 0xFF, 0x70, 23
  KA 0xFF, 0x10, "adc a,0x00", 0x00, 0xB0, 25
  KA 0x35, 0x90, "cpl", 0xCA, 0xF0, 27
  KA 0x35, 0x80, "scf", 0x35, 0x90, 29
  KA 0x35, 0xF0, "ccf", 0x35, 0x80, 31
  KA 0x7F, 0x00, "or 0x80", 0xFF, 0x00, 33
  ; ADD HL,DE keeps Z, sets H from bit 11: 0x0FFF + 0x0001 = 0x1000
  ld hl,0x0080
  push hl
  pop af
  ld hl,0x0FFF
  ld de,0x0001
  add hl,de
  push af
  ld a,h
  ld b,0x10
  ld c,35
  call expect
  pop de
  ld a,e
  ld b,0xA0
  ld c,36
  call expect
  ; PUSH/POP AF: the low nibble of F always reads 0
  ld bc,0x12FF
  push bc
  pop af
  push af
  pop de
  ld a,e
  ld b,0xF0
  ld c,37
  call expect
  ld a,d
  ld b,0x12
  ld c,38
  call expect
  ; LD HL,SP+1 with SP = 0xD0FF: 0xD100, H and C from the low byte
  ld (SAVE_SP),sp
  ld sp,0xD0FF
  ldhl sp,1
  push af
  pop de
  ld sp,0xDF00
  ld a,h
  ld b,0xD1
  ld c,39
  call expect
  ld a,e
  ld b,0x30
  ld c,40
  call expect
  ld a,(SAVE_SP)
  ld l,a
  ld a,(SAVE_SP+1)
  ld h,a
  ld sp,hl
  ret

  .balign 16
operands:
  .db 0x00, 0x01, 0x0F, 0x10, 0x1F, 0x3C, 0x5A, 0x7F, 0x80, 0x81, 0x99, 0xA5, 0xC3, 0xF0, 0xFE, 0xFF
words16:
  .dw 0x0000, 0x0001, 0x00FF, 0x0F00, 0x0FFF, 0x1000, 0x7FFF, 0x8000, 0x8001, 0xF00F, 0xFF00, 0xFFFF
words16_end:

; regs_from_vals: F = (FIN), A = B = C = D = E = (VAL_B), HL = TMP holding (VAL_B).
regs_from_vals:
  ld a,(FIN)
  ld c,a
  ld a,(VAL_B)
  ld b,a
  push bc
  pop af
  ld b,a
  ld c,a
  ld d,a
  ld e,a
  ld hl,TMP
  ld (hl),a
  ret

; regops: the 64 ALU r forms (8 ops x B C D E H L (HL) A) for A and r over operands x operands,
; F = (A ^ r) & 0xF0 (varied carry/half-carry inputs).
regops:
  ld hl,operands
1:
  ld a,(hl+)
  ld (VAL_A),a
  push hl
  ld hl,operands
2:
  ld a,(hl+)
  ld (VAL_B),a
  push hl
  ld b,a
  ld a,(VAL_A)
  xor b
  and 0xF0
  ld (FIN),a
  call regop_block
  pop hl
  ld a,l
  and 0x0F
  jr nz,2b
  pop hl
  ld a,l
  and 0x0F
  jr nz,1b
  ret

regop_block:
  .irp op, add,adc,sub,sbc,and,xor,or,cp
  .irp r, b,c,d,e,h,l,(hl),a
  REGOP \op, \r
  .endr
  .endr
  ret

; incdecs: INC/DEC on B C D E H L A for all 256 values, F alternating 0x50 / 0xA0.
incdecs:
  xor a
  ld (VAL_B),a
1:
  ld a,(VAL_B)
  and 1
  ld a,0x50
  jr z,2f
  ld a,0xA0
2:
  ld (FIN),a
  .irp op, inc,dec
  .irp r, b,c,d,e,h,l,a
  INCDEC \op, \r
  .endr
  .endr
  ld a,(VAL_B)
  inc a
  ld (VAL_B),a
  jp nz,1b
  ret
