; @header cart=0x06 rom=0x03 ram=0x00 title=MBC2
; mbc2.s: MBC2+BATTERY, 16 ROM banks (256 KiB), built-in 512 x 4-bit RAM.
;
; One pass:
;  1. ROM bank register (0x0000-0x3FFF with address bit 8 set): n = 0..31 written at 0x2100 and
;     at 0x3F00 (ids 1, 2): bank seen at 0x4000-0x7FFF = (n & 0x0F) or 1 when 0, into TABLE[n]
;     (0xC100..0xC11F) and TABLE[0x20 + n]
;  2. RAM enable only with address bit 8 clear: 0x0A at 0x0100 does not enable (id 3), at 0x0000
;     does; disabled RAM reads 0xFF (id 4)
;  3. RAM: low nibbles only, upper bits read 1 (id 5), 512-byte echo over 0xA000-0xBFFF (id 6);
;     a pass counter nibble at 0xA1FF
.include "include/header.inc"
.include "include/banks.inc"

main:
pass:
  ld hl,TABLE
  ld de,0x2100
  ld c,1
  call rom_sweep
  ld hl,TABLE+0x20
  ld de,0x3F00
  ld c,2
  call rom_sweep
  ld a,1
  ld (0x2100),a
  ; 2. RAM enable
  xor a
  ld (0x0000),a
  ld a,0x0A
  ld (0x0100),a          ; bit 8 set: this is the ROM bank register (bank 10)
  ld a,(0xA000)
  ld b,0xFF
  ld c,3
  call expect
  ld a,1
  ld (0x2100),a
  ld a,0x0A
  ld (0x0000),a          ; enable
  ; 3. nibble RAM
  ld a,0x5A
  ld (0xA000),a
  ld a,(0xA000)
  ld b,0xFA
  ld c,5
  call expect
  call mix_a
  ld a,(0xA200)          ; echo
  ld c,6
  call expect
  ld a,(0xBE00)
  call expect
  ld a,0x03
  ld (0xB001),a          ; echo of 0xA001
  ld a,(0xA001)
  ld b,0xF3
  ld c,6
  call expect
  ld hl,0xA1FF
  ld a,(hl)
  inc a
  ld (hl),a
  ld a,(hl)
  ld (SCRATCH),a
  xor a
  ld (0x0000),a          ; disable
  ld a,(0xA000)
  ld b,0xFF
  ld c,4
  call expect
  call end_pass
  jp pass

; rom_sweep: for n = 0..31 write n at DE, store the bank signature at HL+n; check id C.
rom_sweep:
  ld b,0
1:
  ld a,b
  ld (de),a
  ld a,(SIG)
  ld (hl+),a
  call mix_a
  push bc
  ld c,a
  ld a,b
  and 0x0F
  jr nz,2f
  inc a
2:
  cp c
  pop bc
  call nz,fail
  inc b
  ld a,b
  cp 32
  jr nz,1b
  ret

  BANK_SIGS 16
