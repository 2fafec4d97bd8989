; @header cart=0x1B rom=0x07 ram=0x03 title=MBC5
; mbc5.s: MBC5+RAM+BATTERY, 256 ROM banks (4 MiB), 4 RAM banks (32 KiB).
;
; One pass:
;  1. n = 0..255 written at 0x2000 (0x2FFF for odd n) with the 9th bit (0x3000) clear: bank n,
;     including bank 0 at 0x4000 (id 1); low byte into TABLE[n] (0xC100..0xC1FF)
;  2. 9th bit set (0x3000 = 1): with 256 banks the number wraps, bank n again (id 2); bits above
;     bit 0 of 0x3000 are ignored (id 3)
;  3. RAM: only 0x0A enables (0x1A does not, id 4); 0x4000 bank = (value & 0x0F) % 4, banks hold
;     their own bytes (ids 5-6); a pass counter in bank 1 at 0xA040 (copy in SCRATCH)
.include "include/header.inc"
.include "include/banks.inc"

main:
pass:
  xor a
  ld (0x3000),a
  ld hl,TABLE
  ld b,0
1:
  ld a,b
  ld de,0x2000
  bit 0,b
  jr z,2f
  ld de,0x2FFF
2:
  ld (de),a
  ld a,(SIG)
  ld (hl+),a
  call mix_a
  cp b
  ld c,1
  call nz,fail
  inc b
  jr nz,1b
  ; 2. the 9th bit
  ld a,1
  ld (0x3000),a
  ld b,0
3:
  ld a,b
  ld (0x2000),a
  ld a,(SIG)
  call mix_a
  cp b
  ld c,2
  call nz,fail
  ld a,(SIG+2)           ; high byte of the bank number in the signature: 0
  or a
  call nz,fail
  ld a,b
  add a,37
  ld b,a
  jr nc,3b
  ld a,0xFE              ; bit 0 clear, other bits set
  ld (0x3000),a
  ld a,0x12
  ld (0x2000),a
  ld a,(SIG)
  ld b,0x12
  ld c,3
  call expect
  ld a,1
  ld (0x2000),a
  xor a
  ld (0x3000),a
  ; 3. RAM
  ld a,0x1A
  ld (0x0000),a          ; not exactly 0x0A: stays disabled
  ld a,(0xA000)
  ld b,0xFF
  ld c,4
  call expect
  ld a,0x0A
  ld (0x0000),a
  ld b,0
4:
  ld a,b
  or 0xF0                ; upper bits ignored
  ld (0x4000),a
  ld a,b
  add a,0x70
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
  add a,4                ; (d + 4) % 4 == d
  ld (0x4000),a
  ld a,d
  add a,0x70
  ld b,a
  ld a,(0xA000)
  ld c,5
  call expect
  call mix_a
  ld a,b
  cpl
  ld b,a
  ld a,(0xBFFF)
  ld c,6
  call expect
  inc d
  ld a,d
  cp 4
  jr nz,5b
  ld a,1
  ld (0x4000),a
  ld hl,0xA040
  inc (hl)
  ld a,(hl)
  ld (SCRATCH),a
  xor a
  ld (0x4000),a
  ld (0x0000),a
  call end_pass
  jp pass

  BANK_SIGS 256
