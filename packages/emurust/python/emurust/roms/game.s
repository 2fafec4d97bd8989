; @header cart=0x00 rom=0x00 ram=0x00 title="EMURUST CATCH"
; game.s: "catch the falling block", the playable ROM behind emurust's RL environment.
;
; A block (sprite) falls from the top at a pseudo-random column; the paddle (three sprites at the
; bottom) moves with LEFT/RIGHT (3 px per frame). Catching the block scores +1 and drops a new
; one (a little faster every 8 points, at most 3 px per frame); a miss sets `done` and shows
; "DEAD". START after a miss starts a new game. The joypad is read through FF00 with both select
; lines (directions, then buttons), once per frame after VBlank.
;
; Fixed WRAM addresses (the RL env reads these; also in README.md):
.equ SCORE,    0xC000   ; u8 binary, catches in this game (saturates at 255)
.equ DONE,     0xC001   ; u8: 1 after a miss (game over) until START restarts, else 0
.equ PADDLE_X, 0xC002   ; u8 OAM x of the paddle's left edge (8..144)
.equ BLOCK_X,  0xC003   ; u8 OAM x of the block
.equ BLOCK_Y,  0xC004   ; u8 OAM y of the block
.equ FRAMES,   0xC005   ; u8 frame counter (wraps)
.equ RNG,      0xC006   ; u8 LFSR state (never 0)
.equ JOY,      0xC007   ; u8 held buttons, 1 = pressed: bit0 right,1 left,2 up,3 down,4 A,5 B,6 select,7 start
.equ GAMES,    0xC008   ; u8 games started (wraps)
.equ JOY_NEW,  0xC009   ; u8 buttons pressed this frame (not held in the previous one)
.equ SPEED,    0xC00B   ; u8 fall speed in px per frame
; (0xC00A is RES_MAGIC, written by the start-up code)

.equ PADDLE_Y, 144      ; OAM y of the paddle (screen line 128)
.equ CATCH_Y,  136      ; block OAM y at which it meets the paddle
.equ BLOCK_Y0, 24       ; block OAM y when spawned (below the score line)

.include "include/header.inc"

main:
  call lcd_off
  call load_font
  call clear_maps
  call clear_oam
  ld a,0xE4              ; 3,2,1,0: identity shades
  ldh (rBGP),a
  ldh (rOBP0),a
  ld a,0xD0              ; paddle: colours 1..3 -> light grey/black
  ldh (rOBP1),a
  ld hl,0x9800 + 17*32   ; ground line (screen row 17)
  ld b,20
  ld a,T_LIGHT
1:
  ld (hl+),a
  dec b
  jr nz,1b
  ld a,0xA5
  ld (RNG),a
  call new_game
  xor a
  ldh (rSCX),a
  ldh (rSCY),a
  ld a,0x93              ; LCD on, tiles at 0x8000, BG map 0x9800, OBJ on (8x8), BG on
  ldh (rLCDC),a
  ld a,0x01              ; VBlank interrupt only
  ldh (rIE),a
  xor a
  ldh (rIF),a
  ei
loop:
  halt                   ; woken by the VBlank interrupt (irq_common counts it)
  nop
  call draw
  call read_joypad
  call update
  jr loop

; new_game: score 0, not done, paddle centred, first block.
new_game:
  xor a
  ld (SCORE),a
  ld (DONE),a
  ld a,72
  ld (PADDLE_X),a
  ld a,1
  ld (SPEED),a
  ld hl,GAMES
  inc (hl)
  jp spawn

; spawn: new block at the top, column from the LFSR (OAM x 12..155).
spawn:
  call rng_step
1:
  cp 144
  jr c,2f
  sub a,144
  jr 1b
2:
  add a,12
  ld (BLOCK_X),a
  ld a,BLOCK_Y0
  ld (BLOCK_Y),a
  ret

; rng_step: 8-bit Galois LFSR (taps 0xB8, period 255); returns the new state in A.
rng_step:
  ld a,(RNG)
  srl a
  jr nc,1f
  xor 0xB8
1:
  ld (RNG),a
  ret

; read_joypad: directions with P14 low, then buttons with P15 low (reads repeated as games do).
read_joypad:
  ld a,0x20              ; P15 high, P14 low: directions
  ldh (rP1),a
  ldh a,(rP1)
  ldh a,(rP1)
  cpl
  and 0x0F
  ld b,a
  ld a,0x10              ; P14 high, P15 low: buttons
  ldh (rP1),a
  ldh a,(rP1)
  ldh a,(rP1)
  cpl
  and 0x0F
  swap a
  or b
  ld b,a
  ld a,(JOY)
  cpl
  and b
  ld (JOY_NEW),a
  ld a,b
  ld (JOY),a
  ld a,0x30              ; deselect both
  ldh (rP1),a
  ret

update:
  ld hl,FRAMES
  inc (hl)
  call rng_step          ; the column of the next block depends on when it is caught
  ld a,(DONE)
  or a
  jr z,1f
  ld a,(JOY_NEW)
  bit 7,a                ; START restarts after a miss
  ret z
  jp new_game
1:
  ld a,(JOY)
  ld b,a
  ld a,(PADDLE_X)
  bit 0,b                ; right
  jr z,2f
  add a,3
  cp 145
  jr c,2f
  ld a,144
2:
  bit 1,b                ; left
  jr z,3f
  sub a,3
  jr c,21f
  cp 8
  jr nc,3f
21:
  ld a,8
3:
  ld (PADDLE_X),a
  ld a,(SPEED)
  ld b,a
  ld a,(BLOCK_Y)
  add a,b
  ld (BLOCK_Y),a
  cp CATCH_Y
  ret c
  ; the block reached the paddle line: caught if [bx, bx+8) overlaps [px, px+24)
  ld a,(PADDLE_X)
  ld c,a
  ld a,(BLOCK_X)
  add a,8
  cp c                   ; bx + 8 <= px: left of the paddle
  jr c,miss
  jr z,miss
  ld a,c
  add a,24
  ld c,a
  ld a,(BLOCK_X)
  cp c                   ; bx >= px + 24: right of the paddle
  jr nc,miss
  ld a,(SCORE)
  inc a
  jr z,4f                ; saturate at 255
  ld (SCORE),a
4:
  ld a,(SCORE)
  srl a
  srl a
  srl a
  inc a
  cp 4
  jr c,5f
  ld a,3
5:
  ld (SPEED),a
  jp spawn
miss:
  ld a,1
  ld (DONE),a
  ret

; draw (during VBlank): sprites, the score in decimal at the top left, "DEAD" when done.
draw:
  ld hl,0xFE00
  ld a,(BLOCK_Y)
  ld (hl+),a
  ld a,(BLOCK_X)
  ld (hl+),a
  ld a,T_SOLID
  ld (hl+),a
  xor a
  ld (hl+),a
  ld a,(PADDLE_X)
  ld b,3
1:
  ld c,a
  ld a,PADDLE_Y
  ld (hl+),a
  ld a,c
  ld (hl+),a
  ld a,T_FRAME
  ld (hl+),a
  ld a,0x10              ; OBP1
  ld (hl+),a
  ld a,c
  add a,8
  dec b
  jr nz,1b
  ; score: hundreds, tens, ones
  ld a,(SCORE)
  ld b,0
2:
  cp 100
  jr c,3f
  sub a,100
  inc b
  jr 2b
3:
  ld c,0
4:
  cp 10
  jr c,5f
  sub a,10
  inc c
  jr 4b
5:
  ld hl,0x9801
  ld d,a
  ld a,b
  add a,T_DIGIT
  ld (hl+),a
  ld a,c
  add a,T_DIGIT
  ld (hl+),a
  ld a,d
  add a,T_DIGIT
  ld (hl+),a
  ; "DEAD" (hex glyphs) at row 8 when done, blanks otherwise
  ld hl,0x9800 + 8*32 + 8
  ld a,(DONE)
  or a
  jr z,6f
  ld a,T_DIGIT+0xD
  ld (hl+),a
  ld a,T_DIGIT+0xE
  ld (hl+),a
  ld a,T_DIGIT+0xA
  ld (hl+),a
  ld a,T_DIGIT+0xD
  ld (hl+),a
  ret
6:
  ld (hl+),a
  ld (hl+),a
  ld (hl+),a
  ld (hl+),a
  ret
