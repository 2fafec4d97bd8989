; @header cart=0x13 rom=0x06 ram=0x03 title=MBC3
; mbc3.s: MBC3+RAM+BATTERY, 128 ROM banks (2 MiB), 4 RAM banks (32 KiB).
;
; One pass:
;  1. n = 0..255 written at 0x2000 (and at 0x3FFF for the odd n): bank seen at 0x4000-0x7FFF
;     = (n & 0x7F) or 1 when 0 (id 1); low byte into TABLE[n] (0xC100..0xC1FF)
;  2. RAM: disabled reads 0xFF (id 2); banks 0-3 via 0x4000 hold their own bytes (ids 3-4);
;     0x0A enables, 0x00 disables; a pass counter in bank 2 at 0xA080 (copy in SCRATCH)
.include "include/header.inc"
.include "include/banks.inc"

main:
pass:
  ld hl,TABLE
  ld b,0
1:
  ld a,b
  ld de,0x2000
  bit 0,b
  jr z,2f
  ld de,0x3FFF
2:
  ld (de),a
  ld a,(SIG)
  ld (hl+),a
  call mix_a
  ld c,a
  ld a,b
  and 0x7F
  jr nz,3f
  inc a
3:
  cp c
  ld c,1
  call nz,fail
  inc b
  jr nz,1b
  ld a,1
  ld (0x2000),a
  ; 2. RAM
  xor a
  ld (0x0000),a
  ld a,(0xA000)
  ld b,0xFF
  ld c,2
  call expect
  ld a,0x0A
  ld (0x0000),a
  ld b,0
4:
  ld a,b
  ld (0x4000),a
  add a,0x30
  ld (0xA000),a
  cpl
  ld (0xBFFF),a
  inc b
  ld a,b
  cp 4
  jr nz,4b
  ld d,0
5:
  ld a,d
  ld (0x4000),a
  add a,0x30
  ld b,a
  ld a,(0xA000)
  ld c,3
  call expect
  call mix_a
  ld a,b
  cpl
  ld b,a
  ld a,(0xBFFF)
  ld c,4
  call expect
  inc d
  ld a,d
  cp 4
  jr nz,5b
  ld a,2
  ld (0x4000),a
  ld hl,0xA080
  inc (hl)
  ld a,(hl)
  ld (SCRATCH),a
  xor a
  ld (0x4000),a
  ld (0x0000),a
  call end_pass
  jp pass

  BANK_SIGS 128
