; @header cart=0x00 rom=0x00 ram=0x00 title=SERIAL
; serial.s: serial transfers with the internal clock (no link partner: 0xFF comes in).
;
; One pass:
;  1. SB = n (n = pass number), SC = 0x81; SC bit 7 polled until clear, with IME off: the
;     iterations are counted (SCRATCH 0xC010) and IF bit 3 must be set afterwards (id 1),
;     SB reads 0xFF (id 2), SC reads 0x7F/0x01 | unused bits (stored at 0xC011)
;  2. same with the serial interrupt enabled and HALT: IRQ_COUNT+3 grows by one (id 3)
;  3. SC = 0x80 (external clock, no partner): nothing completes within 4 frames (id 4)
;  4. SB written between transfers reads back as PyBoy stores it (0xC012, mixed)
; The SB values written are also what PyBoy collects as the serial output of the ROM.
.include "include/header.inc"

main:
pass:
  ; 1. polling
  di
  xor a
  ldh (rIF),a
  ldh (rIE),a
  ld a,(RES_PASSES)
  ldh (rSB),a
  ld a,0x81
  ldh (rSC),a
  ld bc,0
1:
  inc bc
  ld a,b
  cp 0x40
  jr z,2f                ; give up after 16k iterations (a failure below)
  ldh a,(rSC)
  bit 7,a
  jr nz,1b
2:
  ld a,c
  ld (SCRATCH),a
  call mix_a
  ldh a,(rIF)
  and 0x08
  ld b,0x08
  ld c,1
  call expect
  ldh a,(rSB)
  ld b,0xFF
  ld c,2
  call expect
  ldh a,(rSC)
  ld (SCRATCH+1),a
  call mix_a
  ; 2. interrupt + HALT
  ld a,(IRQ_COUNT+3)
  inc a
  ld d,a
  xor a
  ldh (rIF),a
  ld a,0x08
  ldh (rIE),a
  ld a,0x42
  ldh (rSB),a
  ld a,0x81
  ldh (rSC),a
  ei
  halt
  nop
  di
  ld a,(IRQ_COUNT+3)
  ld b,d
  ld c,3
  call expect
  ; 3. external clock: never completes here
  xor a
  ldh (rIF),a
  ldh (rIE),a
  ld a,0x80
  ldh (rSC),a
  ld b,4
3:
  call wait_vblank
  dec b
  jr nz,3b
  ldh a,(rIF)
  and 0x08
  ld b,0
  ld c,4
  call expect
  xor a
  ldh (rSC),a
  ; 4. SB read-back
  ld a,0x3C
  ldh (rSB),a
  ldh a,(rSB)
  ld (SCRATCH+2),a
  call mix_a
  call end_pass_unchecked
  jp pass
