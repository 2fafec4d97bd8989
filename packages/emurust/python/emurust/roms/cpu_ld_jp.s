; @header cart=0x00 rom=0x00 ram=0x00 title=CPU_LD_JP
; cpu_ld_jp.s: loads, stack and control flow.
;
; One pass (results mixed into the checksum; end_pass checks passes agree):
;  - LD r,r' for all 49 register pairs, LD r,n, LD r,(HL) / LD (HL),r, LD (HL),n,
;    LD A,(BC)/(DE), LD (BC)/(DE),A, LDI/LDD both ways, LD A,(nn)/(nn),A, LDH (n)/(C) both ways,
;    LD rr,nn, LD (nn),SP, LD SP,HL, PUSH/POP BC DE HL AF
;  - JP/JR/CALL/RET cc for NZ Z NC C under F = 0x00, 0x10, 0x80, 0x90: taken or not, compared
;    with the expected table (ids 1-64: 16 * kind + 4 * flags index + condition + 1)
;  - JP nn, JR back/forward, JP (HL), CALL/RET, RST 00..38 (RST_LAST/RST_COUNT, A/F kept;
;    ids 65-72), RETI sets IME (id 73)
.include "include/header.inc"

.equ TMP, SCRATCH        ; 0xC010..0xC01F scratch memory for the loads
.equ FLAGS, SCRATCH+0x10
.equ CASE, SCRATCH+0x11  ; running id for the branch table

; set every register to a distinct value
.macro REGS
  ld bc,0x1122
  ld de,0x3344
  ld hl,0x5566
  ld a,0x77
.endm

main:
pass:
  ; LD r,r'
  .irp d, b,c,d,e,h,l,a
  .irp s, b,c,d,e,h,l,a
  REGS
  ld \d,\s
  call mix_regs
  .endr
  .endr
  ; LD r,n
  .irp d, b,c,d,e,h,l,a
  REGS
  ld \d,0xA5
  call mix_regs
  .endr
  ; LD r,(HL) and LD (HL),r
  .irp r, b,c,d,e,a
  REGS
  ld hl,TMP
  ld (hl),0x3C
  ld \r,(hl)
  call mix_regs
  REGS
  ld hl,TMP
  ld (hl),\r
  ld a,(hl)
  call mix_a
  .endr
  ld hl,TMP
  ld (hl),h
  ld a,(hl)
  call mix_a
  ld (hl),l
  ld a,(hl)
  call mix_a
  ld h,(hl)              ; H = L's value
  call mix_regs
  ; (BC), (DE), LDI/LDD, (nn), LDH
  ld bc,TMP+1
  ld a,0x81
  ld (bc),a
  ld de,TMP+2
  ld a,0x82
  ld (de),a
  ld a,(bc)
  call mix_a
  ld a,(de)
  call mix_a
  ld hl,TMP+3
  ld a,0x91
  ld (hl+),a
  ld a,0x92
  ld (hl-),a
  ld a,(hl+)
  call mix_a
  ld a,(hl-)
  call mix_a
  call mix_hl
  ldi (hl),a
  ldd a,(hl)
  call mix_regs
  ld a,0xB7
  ld (TMP+5),a
  ld a,(TMP+5)
  call mix_a
  ld a,0x13
  ldh (0x80),a
  ld a,0
  ldh a,(0x80)
  call mix_a
  ld c,0x81
  ld a,0x14
  ldh (c),a
  xor a
  ldh a,(c)
  call mix_a
  ; 16-bit loads, SP
  ld bc,0xBEEF
  ld de,0xCAFE
  ld hl,0xF00D
  call mix_regs
  ld (TMP+6),sp
  ld a,(TMP+6)
  call mix_a
  ld a,(TMP+7)
  call mix_a
  ld hl,0
  add hl,sp
  ld b,h
  ld c,l                 ; BC = SP
  ld hl,0xD800
  ld sp,hl               ; LD SP,HL
  push bc
  pop de
  ld hl,0
  add hl,sp
  call mix_hl
  ld h,d
  ld l,e
  ld sp,hl               ; back
  ; PUSH/POP every pair
  REGS
  push bc
  push de
  push hl
  push af
  pop bc
  pop de
  pop hl
  pop af
  call mix_regs
  ; conditional branches
  ld a,1
  ld (CASE),a
  call branches
  ; unconditional control flow
  ld hl,1f
  jp (hl)
  call fail              ; (never: C is whatever, counted as a failure)
1:
  jr 2f
3:
  jp 4f
2:
  jr 3b
4:
  call rsts
  call reti_test
  call end_pass
  jp pass

; mix_regs: A, F, B, C, D, E, H, L into the checksum (registers kept).
mix_regs:
  call mix_af
  call mix_bc
  call mix_de
  jp mix_hl

; branches: every kind x flags x condition; B = 1 if taken, 0 if not; compared with `expected`.
.macro BR kind, cond
  ld a,(FLAGS)
  ld c,a
  push bc
  pop af
  ld b,0
  .ifc \kind,jp
  jp \cond,10f
  .endif
  .ifc \kind,jr
  jr \cond,10f
  .endif
  .ifc \kind,call
  call \cond,taken
  .endif
  .ifc \kind,ret
  call ret_cc_\cond
  .endif
  jr 11f
10:
  ld b,1
11:
  call check_branch
.endm

branches:
  ld hl,flag_values
1:
  ld a,(hl+)
  ld (FLAGS),a
  push hl
  .irp k, jp,jr,call,ret
  .irp c, nz,z,nc,c
  BR \k, \c
  .endr
  .endr
  pop hl
  ld a,l
  cp (flag_values+4) & 0xFF
  jp nz,1b
  ret

taken:
  ld b,1
  ret

.irp c, nz,z,nc,c
ret_cc_\c:
  ld b,1
  ret \c
  ld b,0
  ret
.endr

; check_branch: B = 1 if the branch was taken; id = CASE; CASE += 1.
; Case order: flags (outer) x kind x condition, so the expectation depends on flags and
; condition only: expected_by_flags[flags index * 4 + condition].
check_branch:
  push hl
  ld a,b
  call mix_a
  ld a,(CASE)
  dec a
  ld c,a
  and 3                  ; condition
  ld l,a
  ld a,c
  rrca
  rrca
  and 0x0C               ; ((case - 1) / 16) * 4 = flags index * 4
  add a,l
  add a,expected & 0xFF
  ld l,a
  ld a,0
  adc a,expected >> 8
  ld h,a
  ld a,(hl)
  cp b
  ld a,(CASE)
  ld c,a
  call nz,fail
  inc a
  ld (CASE),a
  pop hl
  ret

; rsts: every RST vector records itself and keeps A and F.
.macro RSTT n, id
  ld a,(RST_COUNT)
  ld d,a
  ld bc,0x3CD0
  push bc
  pop af
  rst \n
  push af
  pop bc
  ld a,b
  cp 0x3C
  jr nz,10f
  ld a,c
  cp 0xD0
  jr nz,10f
  ld a,(RST_LAST)
  cp \n
  jr nz,10f
  ld a,(RST_COUNT)
  dec a
  cp d
  jr z,11f
10:
  ld c,\id
  call fail
11:
.endm

rsts:
  RSTT 0x00, 65
  RSTT 0x08, 66
  RSTT 0x10, 67
  RSTT 0x18, 68
  RSTT 0x20, 69
  RSTT 0x28, 70
  RSTT 0x30, 71
  RSTT 0x38, 72
  ret

; reti_test: a timer interrupt is pending with IME off; calling a RETI turns IME on and it is
; dispatched right away.
reti_test:
  xor a
  ld (IRQ_LOGIDX),a
  ld a,0x04
  ldh (rIE),a
  ldh (rIF),a
  call do_reti
  di
  ld a,(IRQ_LOGIDX)
  ld b,1
  ld c,73
  call expect
  xor a
  ldh (rIE),a
  ret
do_reti:
  reti

flag_values:
  .db 0x00, 0x10, 0x80, 0x90
; taken? for NZ Z NC C under each flag value
expected:
  .db 1, 0, 1, 0         ; F = 0x00
  .db 1, 0, 0, 1         ; C
  .db 0, 1, 1, 0         ; Z
  .db 0, 1, 0, 1         ; Z C
