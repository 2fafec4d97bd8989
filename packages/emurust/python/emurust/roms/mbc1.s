; @header cart=0x03 rom=0x05 ram=0x03 title=MBC1
; mbc1.s: MBC1+RAM+BATTERY, 64 ROM banks (1 MiB), 4 RAM banks (32 KiB).
;
; Every bank carries a signature at 0x3F00 of the bank (include/banks.inc). One pass:
;  1. mode 0: for every register pair (0x2000 = n & 0x1F, 0x4000 = n >> 5), n = 0..127, the bank
;     number seen at 0x4000-0x7FFF goes to TABLE[n] (0xC100..0xC17F); self-check against
;     ((n & 0x1F) == 0 ? n | 1 : n) & 63 (id 1)
;  2. mode 1 (0x6000 = 1), run from WRAM: bank seen at 0x0000-0x3FFF for 0x4000 = 0..3 goes to
;     0xC180..0xC183 (expected 0x00, 0x20, 0x00, 0x20 with 64 banks; id 2)
;  3. RAM: disabled reads 0xFF (id 3); mode 1 selects RAM banks 0-3 (signatures written, read
;     back into 0xC190..0xC197, ids 4-5; run from WRAM because mode 1 also remaps 0x0000-0x3FFF);
;     mode 0 always uses RAM bank 0 (id 6); a pass counter kept in bank 3 at 0xA100 (copied to
;     SCRATCH, 0xC010)
.include "include/header.inc"
.include "include/banks.inc"

.equ RAMCODE, 0xD000
.equ RAMCODE2, 0xD100

main:
  ld hl,mode1_probe
  ld de,RAMCODE
  ld bc,mode1_probe_end-mode1_probe
  call memcpy
  ld hl,ram_probe
  ld de,RAMCODE2
  ld bc,ram_probe_end-ram_probe
  call memcpy
pass:
  ; 1. mode 0 ROM banking
  xor a
  ld (0x6000),a
  ld hl,TABLE
  ld e,0                 ; n
1:
  ld a,e
  and 0x1F
  ld (0x2000),a
  ld a,e
  swap a
  rrca                   ; n >> 5 (bits 5-6 to 0-1)
  and 0x03
  ld (0x4000),a
  ld a,(SIG)
  ld (hl+),a
  call mix_a
  ld b,a
  ld a,e                 ; expected bank
  and 0x1F
  ld a,e
  jr nz,2f
  or 1
2:
  and 63
  cp b
  ld c,1
  call nz,fail
  inc e
  ld a,e
  cp 128
  jr nz,1b
  ; 2. mode 1: the 0x0000-0x3FFF bank follows the upper bits
  ld hl,TABLE+0x80
  ld b,0
3:
  call RAMCODE
  ld (hl+),a
  call mix_a
  inc b
  ld a,b
  cp 4
  jr nz,3b
  ld hl,TABLE+0x80
  ld de,mode1_expected
  ld b,4
4:
  ld a,(de)
  cp (hl)
  ld c,2
  call nz,fail
  inc hl
  inc de
  dec b
  jr nz,4b
  ; 3. RAM
  xor a
  ld (0x0000),a          ; disabled
  ld a,(0xA000)
  ld b,0xFF
  ld c,3
  call expect
  ld a,0x0A
  ld (0x0000),a          ; enabled
  call RAMCODE2          ; mode 1 also moves 0x0000-0x3FFF to bank 0x20: runs from WRAM
  ld hl,TABLE+0x90
  ld b,0
6:
  ld a,(hl+)
  ld c,4
  call expect
  call mix_a
  ld a,(hl+)
  cpl
  ld c,5
  call expect
  inc b
  ld a,b
  cp 4
  jr nz,6b
  ; mode 0: RAM bank 0 whatever 0x4000 says
  xor a
  ld (0x6000),a
  ld a,2
  ld (0x4000),a
  ld a,(0xA000)
  ld b,0
  ld c,6
  call expect
  xor a
  ld (0x4000),a
  ld (0x0000),a          ; RAM off again
  ld a,1
  ld (0x2000),a
  call end_pass
  jp pass

mode1_expected:
  .db 0x00, 0x20, 0x00, 0x20

; Copied to WRAM: mode 1 with upper bits B, read the bank 0 area's signature, back to mode 0.
mode1_probe:
  ld a,1
  ld (0x6000),a
  ld a,b
  ld (0x4000),a
  ld a,(SIG0)
  ld c,a
  xor a
  ld (0x4000),a
  ld (0x6000),a
  ld a,c
  ret
mode1_probe_end:

; Copied to WRAM: in mode 1 write (n, ~n) to 0xA000/0xBFFF of RAM bank n = 0..3, read them back
; into TABLE+0x90.., bump the pass counter at 0xA100 of bank 3 (copy in SCRATCH), back to mode 0.
ram_probe:
  ld a,1
  ld (0x6000),a
  ld b,0
1:
  ld a,b
  ld (0x4000),a
  ld (0xA000),a
  cpl
  ld (0xBFFF),a
  inc b
  ld a,b
  cp 4
  jr nz,1b
  ld b,0
  ld hl,TABLE+0x90
2:
  ld a,b
  ld (0x4000),a
  ld a,(0xA000)
  ld (hl+),a
  ld a,(0xBFFF)
  ld (hl+),a
  inc b
  ld a,b
  cp 4
  jr nz,2b
  ld a,3
  ld (0x4000),a
  ld hl,0xA100
  inc (hl)
  ld a,(hl)
  ld (SCRATCH),a
  xor a
  ld (0x4000),a
  ld (0x6000),a
  ret
ram_probe_end:

  BANK_SIGS 64
