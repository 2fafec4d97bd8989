; @header cart=0x00 rom=0x00 ram=0x00 title=JOYPAD
; joypad.s: P1 (FF00) with each select line, both, and none; the joypad interrupt; polling.
;
; Every frame (VBlank via HALT; IE = VBlank | Joypad, so presses also wake the CPU):
;  - P1 written 0x20 (directions), 0x10 (buttons), 0x30 (none), 0x00 (both); each read stored at
;    0xC012..0xC015 and mixed into the checksum
;  - pressed buttons (1 = pressed, same encoding as game.s: bit0 right, 1 left, 2 up, 3 down,
;    4 A, 5 B, 6 select, 7 start) at 0xC016, and drawn: one tile per button (solid = pressed) on
;    row 2 and the byte in hex on row 4
;  - until the next VBlank P1 is polled (directions selected); reads that differ from the
;    previous one are counted at 0xC017 (u8, per frame)
;  - joypad interrupts taken: IRQ_COUNT+4 (0xC0A4)
; Self-check: bits 6-7 read 1 (id 1). PyBoy 2.8.1 (interaction.py:pull) returns the select bits
; 4-5 as 0 when one line is selected and 0xCF when none is (hardware reads them back as
; written): no self-check on them, the reads are only mixed into the checksum.
; RES_PASSES counts frames.
.include "include/header.inc"

.equ READS, SCRATCH+2    ; 0xC012..0xC015
.equ PRESSED, SCRATCH+6  ; 0xC016
.equ CHANGES, SCRATCH+7  ; 0xC017

main:
  call lcd_off
  call load_font
  call clear_maps
  ld a,0xE4
  ldh (rBGP),a
  ld a,0x91
  ldh (rLCDC),a
  ld a,0x11
  ldh (rIE),a
  xor a
  ldh (rIF),a
  ei
frame:
  ld a,(IRQ_COUNT)       ; the VBlank interrupt may already have come during the polling
  or a
  jr nz,1f
  halt                   ; a joypad interrupt may wake us too: then wait on
  nop
  jr frame
1:
  xor a
  ld (IRQ_COUNT),a
  call draw              ; VRAM while in VBlank
  ld hl,READS
  ld a,0x20
  call read_p1
  ld b,a
  ld a,0x10
  call read_p1
  ld c,a
  ld a,0x30
  call read_p1
  xor a
  call read_p1
  ld a,b                 ; pressed = ~(buttons << 4 | directions)
  and 0x0F
  ld b,a
  ld a,c
  and 0x0F
  swap a
  or b
  cpl
  ld (PRESSED),a
  call mix_a
  ; poll until VBlank
  ld a,0x20
  ldh (rP1),a
  ldh a,(rP1)
  ld d,a
  ld e,0
1:
  ldh a,(rLY)
  cp 144
  jr z,2f
  ld a,0x20              ; PyBoy computes P1 on the write, so rewrite before each read
  ldh (rP1),a
  ldh a,(rP1)
  cp d
  jr z,1b
  ld d,a
  inc e
  jr 1b
2:
  ld a,e
  ld (CHANGES),a
  call end_pass_unchecked
  jr frame

; read_p1: write A to P1, read it back twice (stored at HL++, mixed); returns the read; checks
; that bits 6-7 read 1.
read_p1:
  ldh (rP1),a
  ldh a,(rP1)
  ldh a,(rP1)
  ld (hl+),a
  call mix_a
  push bc
  push af
  and 0xC0
  cp 0xC0
  ld c,1
  call nz,fail
  pop af
  pop bc
  ret

draw:
  ld hl,0x9800 + 2*32 + 2
  ld a,(PRESSED)
  ld b,8
1:
  rrca
  ld c,a
  ld a,T_FRAME
  jr nc,2f
  ld a,T_SOLID
2:
  ld (hl+),a
  inc hl
  ld a,c
  dec b
  jr nz,1b
  ld hl,0x9800 + 4*32 + 2
  ld a,(PRESSED)
  jp print_hex
