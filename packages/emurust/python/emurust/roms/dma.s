; @header cart=0x00 rom=0x00 ram=0x00 title=DMA
; dma.s: OAM DMA from ROM and WRAM, run from HRAM, OAM reads during a DMA, restart, FF46 read.
;
; One pass (LCD off while OAM is compared, so the PPU cannot block the reads):
;  1. DMA from ROM (page 0x30) through the HRAM routine: OAM == source (id 1)
;  2. DMA from WRAM (page 0xC3, pattern i ^ pass): OAM == source (id 2)
;  3. an OAM read 16 cycles after the DMA started returns 0xFF (id 3; value at 0xC010)
;  4. restart: a second DMA (ROM page 0x31) 40 cycles into one from WRAM; OAM == the second
;     source (id 4)
;  5. FF46 reads back the last source page (id 5)
;  6. LCD on for 2 frames showing the sprites (tile 1 = solid)
; OAM contents are mixed into the checksum (end_pass_unchecked: the WRAM pattern changes).
.include "include/header.inc"

.equ HRAM_PROBE, 0xFF90

main:
  call lcd_off
  call load_font
  call clear_maps
  call install_dma
  ld hl,probe_routine
  ld de,HRAM_PROBE
  ld bc,probe_routine_end-probe_routine
  call memcpy
  ld hl,restart_routine
  ld de,HRAM_RESTART
  ld bc,restart_routine_end-restart_routine
  call memcpy
  ld a,0xE4
  ldh (rBGP),a
  ldh (rOBP0),a
pass:
  call lcd_off
  ; 1. from ROM
  ld a,0x30
  call HRAM_DMA
  ld hl,0x3000
  ld c,1
  call compare_oam
  ; 2. from WRAM
  ld hl,0xC300
  ld a,(RES_PASSES)
  ld d,a
  ld b,160
1:
  ld a,l
  xor d
  ld (hl+),a
  dec b
  jr nz,1b
  ld a,0xC3
  call HRAM_DMA
  ld hl,0xC300
  ld c,2
  call compare_oam
  ; 3. read during the DMA
  ld a,0x30
  call HRAM_PROBE
  ld a,b
  ld (SCRATCH),a
  call mix_a
  ld b,0xFF
  ld c,3
  call expect
  ; 4. restart
  call HRAM_RESTART
  ld hl,0x3100
  ld c,4
  call compare_oam
  ; 5. FF46 read-back
  ldh a,(rDMA)
  ld b,0x31
  ld c,5
  call expect
  ; 6. show it
  ld a,0x93
  ldh (rLCDC),a
  call wait_vblank
  call wait_vblank
  call end_pass_unchecked
  jp pass

; compare_oam: OAM vs 160 bytes at HL, failure id C, every OAM byte mixed.
compare_oam:
  ld de,0xFE00
1:
  ld a,(de)
  call mix_a
  cp (hl)
  call nz,fail
  inc hl
  inc e
  ld a,e
  cp 160
  jr nz,1b
  ret

; HRAM: start a DMA from page A, read OAM 16 cycles later into B, wait for the end.
probe_routine:
  ldh (rDMA),a
  nop
  nop
  ld a,(0xFE00)
  ld b,a
  ld a,40
1:
  dec a
  jr nz,1b
  ret
probe_routine_end:

; HRAM: DMA from 0xC3, restarted from 0x31 about 40 cycles later.
.equ HRAM_RESTART, 0xFFB0
restart_routine:
  ld a,0xC3
  ldh (rDMA),a
  ld a,3
1:
  dec a
  jr nz,1b
  ld a,0x31
  ldh (rDMA),a
  ld a,45
2:
  dec a
  jr nz,2b
  ret
restart_routine_end:

  ; DMA sources in ROM: page 0x30 = sprites on a diagonal, page 0x31 = a row
  .org 0x3000
  .set I, 0
  .rept 40
  .db 16 + I*3, 8 + I*4, 1, (I & 3) << 5
  .set I, I+1
  .endr
  .org 0x3100
  .set I, 0
  .rept 40
  .db 80 + (I & 1)*8, 8 + (I % 20) * 8, 3, (I & 1) << 4
  .set I, I+1
  .endr
