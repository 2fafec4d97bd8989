; @header cart=0x00 rom=0x00 ram=0x00 title=PPU_RENDER
; ppu_render.s: background, window and sprites with per-frame and mid-frame changes.
;
; Every frame (VBlank interrupt, HALT) the ROM DMAs a shadow OAM (0xC200) to OAM and sets the
; registers for the frame from the frame counter f (RES_PASSES, u16):
;  - SCX = f, SCY = f/2; at LY 48 SCX gets +4 and at LY 96 BGP is rotated (mid-frame writes,
;    polled on LY)
;  - LCDC: BG on, OBJ on; OBJ 8x16 when f bit 7; window (map 0x9C00) when f bit 6 with WX/WY
;    moving; BG tile data 0x8800 (inverted copies of the tiles) when f bit 8
;  - BGP/OBP0/OBP1 rotate every 32 frames
;  - sprites 0-11 on one line (only 10 are drawn), X/Y flips and both palettes by index;
;    12-19 overlapping (X priority), odd ones behind BG colours 1-3; 20-39 wander
; The window shows f in hex. Self-check: a VRAM byte reads back in VBlank (id 1).
.include "include/header.inc"

.equ SHADOW, 0xC200
.equ F_LO, RES_PASSES
.equ F_HI, RES_PASSES+1
.equ T_ARROW, 0x04       ; asymmetric tiles (flips are visible)
.equ T_PAT, 0x08         ; 4 BG pattern tiles

main:
  call lcd_off
  call load_font
  ld hl,pattern_tiles
  ld de,0x8000 + T_ARROW*16
  ld bc,pattern_tiles_end-pattern_tiles
  call memcpy
  ; the 0x8800 data area (indices 0-127 at 0x9000): inverted copies of tiles 0x00-0x1F
  ld hl,0x8000
  ld de,0x9000
  ld bc,0x200
1:
  ld a,(hl+)
  cpl
  ld (de),a
  inc de
  dec bc
  ld a,b
  or c
  jr nz,1b
  ; BG map 0x9800: pattern tiles (x ^ y) & 3, and the row's digit in columns 5, 13, 21, 29
  ld hl,0x9800
  ld d,0                 ; y
2:
  ld e,0                 ; x
3:
  ld a,d
  xor e
  and 3
  add a,T_PAT
  ld b,a
  ld a,e
  and 7
  cp 5
  jr nz,4f
  ld a,d
  and 0x0F
  add a,T_DIGIT
  ld b,a
4:
  ld a,b
  ld (hl+),a
  inc e
  ld a,e
  cp 32
  jr nz,3b
  inc d
  ld a,d
  cp 32
  jr nz,2b
  ; window map 0x9C00: frame tiles
  ld hl,0x9C00
  ld bc,0x400
  ld a,T_FRAME
  call memset
  ld hl,0x8010           ; self-check: VRAM reads back (LCD off)
  ld a,(hl)
  ld b,0xFF
  ld c,1
  call expect
  call install_dma
  call clear_oam
  ld hl,SHADOW
  ld bc,160
  xor a
  call memset
  ld a,0xE4
  ldh (rBGP),a
  ldh (rOBP0),a
  ld a,0x1B
  ldh (rOBP1),a
  ld a,0xD3
  ldh (rLCDC),a
  ld a,0x01
  ldh (rIE),a
  xor a
  ldh (rIF),a
  ei
frame:
  halt
  nop
  ld a,(IRQ_COUNT)       ; only VBlank is enabled, but be strict
  or a
  jr z,frame
  xor a
  ld (IRQ_COUNT),a
  ld a,SHADOW>>8
  call HRAM_DMA
  call set_registers
  call draw_counter
  call build_oam
  ; mid-frame changes
1:
  ldh a,(rLY)
  cp 48
  jr nz,1b
  ldh a,(rSCX)
  add a,4
  ldh (rSCX),a
2:
  ldh a,(rLY)
  cp 96
  jr nz,2b
  ldh a,(rBGP)
  rlca
  rlca
  ldh (rBGP),a
  call end_pass_unchecked   ; frame counter += 1
  jr frame

set_registers:
  ld a,(F_LO)
  ldh (rSCX),a
  srl a
  ldh (rSCY),a
  ld a,(F_LO)
  add a,a
  and 0x7F
  add a,7
  ldh (rWX),a
  ld a,(F_LO)
  and 0x3F
  add a,40
  ldh (rWY),a
  ; LCDC
  ld b,0xC3              ; on, window map 0x9C00, OBJ on, BG on, tile data 0x8800
  ld a,(F_HI)
  and 1
  jr nz,1f
  set 4,b                ; tile data 0x8000
1:
  ld a,(F_LO)
  bit 7,a
  jr z,2f
  set 2,b                ; OBJ 8x16
2:
  bit 6,a
  jr z,3f
  set 5,b                ; window on
3:
  ld a,b
  ldh (rLCDC),a
  ; palettes every 32 frames
  ld a,(F_LO)
  and 0x1F
  ret nz
  ldh a,(rBGP)
  rlca
  rlca
  ldh (rBGP),a
  ldh a,(rOBP0)
  rrca
  rrca
  ldh (rOBP0),a
  ldh a,(rOBP1)
  xor 0xFC
  ldh (rOBP1),a
  ret

draw_counter:
  ld hl,0x9C21
  ld a,(F_HI)
  call print_hex
  ld a,(F_LO)
  jp print_hex

; build_oam: the next frame's sprites in SHADOW.
build_oam:
  ld hl,SHADOW
  ; 0-11: one line (OAM y 116), x = 8 + 12 i + (f & 15)
  ld a,(F_LO)
  and 0x0F
  add a,8
  ld d,a                 ; x
  ld e,0                 ; i
1:
  ld a,116
  ld (hl+),a
  ld a,d
  ld (hl+),a
  add a,12
  ld d,a
  ld a,e
  and 3
  add a,T_ARROW
  ld (hl+),a
  ld a,e
  and 7
  swap a                 ; i bits 0-2 -> attr bits 4-6: palette, X flip, Y flip
  ld (hl+),a
  inc e
  ld a,e
  cp 12
  jr nz,1b
  ; 12-19: overlapping at OAM y 56, x = 60 + 3 i, odd ones behind the BG
2:
  ld a,56
  ld (hl+),a
  ld a,e
  ld b,a
  add a,a
  add a,b                ; 3 i
  add a,24
  ld (hl+),a
  ld a,e
  and 3
  add a,T_ARROW
  ld (hl+),a
  ld a,e
  and 1
  rrca                   ; bit 7: behind BG colours 1-3
  ld (hl+),a
  inc e
  ld a,e
  cp 20
  jr nz,2b
  ; 20-39 wander: y = 16 + ((f + 7 i) & 127), x = (2 f + 13 i) & 0xA7
3:
  ld a,e
  ld b,a
  add a,a
  add a,a
  add a,a
  sub a,b                ; 7 i
  ld b,a
  ld a,(F_LO)
  add a,b
  and 127
  add a,16
  ld (hl+),a
  ld a,e
  ld b,a
  swap a
  sub a,b
  sub a,b
  sub a,b                ; 13 i
  ld b,a
  ld a,(F_LO)
  add a,a
  add a,b
  and 0xA7
  ld (hl+),a
  ld a,e
  and 7
  add a,T_ARROW
  ld (hl+),a
  ld a,e
  and 0x70
  ld (hl+),a
  inc e
  ld a,e
  cp 40
  jr nz,3b
  ret

pattern_tiles:
  ; arrows (colour 3 outline, colour 1/2 fill): asymmetric in X and Y
  .db 0x80,0x80,0xC0,0xC0,0xE0,0xA0,0xF0,0x90,0xF8,0x88,0xC0,0xC0,0x80,0x80,0x00,0x00
  .db 0xFF,0x00,0xFE,0x02,0xFC,0x04,0xF8,0x08,0xF0,0x10,0xE0,0x20,0xC0,0x40,0x80,0x80
  .db 0x0F,0x0F,0x07,0x07,0x03,0x03,0x01,0x01,0xF0,0x00,0x70,0x00,0x30,0x00,0x10,0x00
  .db 0x81,0xFF,0x42,0x7E,0x24,0x3C,0x18,0x18,0x00,0xFF,0x00,0x7E,0x00,0x3C,0x00,0x18
  ; T_PAT: horizontal stripes (0/1), vertical stripes (0/2), checker (0/3), 4-colour gradient
  .db 0xFF,0x00,0x00,0x00,0xFF,0x00,0x00,0x00,0xFF,0x00,0x00,0x00,0xFF,0x00,0x00,0x00
  .db 0x00,0xAA,0x00,0xAA,0x00,0xAA,0x00,0xAA,0x00,0xAA,0x00,0xAA,0x00,0xAA,0x00,0xAA
  .db 0xAA,0xAA,0x55,0x55,0xAA,0xAA,0x55,0x55,0xAA,0xAA,0x55,0x55,0xAA,0xAA,0x55,0x55
  .db 0x00,0x00,0x00,0x00,0xFF,0x00,0xFF,0x00,0x00,0xFF,0x00,0xFF,0xFF,0xFF,0xFF,0xFF
pattern_tiles_end:
