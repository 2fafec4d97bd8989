; @header cart=0x00 rom=0x00 ram=0x00 title=PPU_MODES
; ppu_modes.s: STAT modes and interrupts, LY/LYC, LCD off/on, mode-3 length vs SCX and sprites.
;
; One pass (a few frames), results in TABLE/SCRATCH and the checksum:
;  1. mode sequence polled on line 20: 2 -> 3 -> 0 (ids 1-3); the polling iterations spent in
;     modes 2/3/0 at 0xC010..0xC012
;  2. LYC = LY coincidence: for LYC in 0, 1, 80, 143, 144, 153 the STAT bit 2 is set while
;     LY == LYC (ids 4..9)
;  3. STAT interrupts per frame with one source each: HBlank (0x08), OAM (0x20), VBlank (0x10),
;     LYC (0x40); counts at 0xC013..0xC016 (HBlank 144 +-2, id 10; LYC exactly 1, id 11)
;  4. LCD off in VBlank: LY reads 0 and STAT mode 0 (ids 12-13); LCD on: LY counts again (id 14)
;  5. mode-3 length: polling iterations in mode 3 on line 30 for SCX = 0..7 (TABLE 0xC100..),
;     then with 10 sprites on the line (0xC108)
;  6. VRAM (0x9BFF, off screen) and OAM (0xFE9F) reads and writes during modes 2 and 3 with
;     different opcodes (LD A,(nn) / LD A,(HL) / LD (HL),n): what gets through is PyBoy's
;     timing model (memory_access_offset), so the values are only recorded (0xC030..0xC037)
;     and mixed
.include "include/header.inc"

main:
  call lcd_off
  call load_font
  call clear_maps
  call clear_oam
  ld a,0xE4
  ldh (rBGP),a
  ldh (rOBP0),a
  ld a,0x93
  ldh (rLCDC),a
pass:
  di
  xor a
  ldh (rIE),a
  ldh (rSTAT),a
  ldh (rSCX),a
  ; 1. modes on line 20
  ld b,20
  call wait_ly
  ld hl,SCRATCH
  ld d,2
  ld c,1
  call count_mode
  ld d,3
  ld c,2
  call count_mode
  ld d,0
  ld c,3
  call count_mode
  ; 2. coincidence flag
  ld hl,lyc_values
  ld c,4
1:
  ld a,(hl+)
  ldh (rLYC),a
  ld b,a
  call wait_ly
  ldh a,(rSTAT)
  call mix_a
  and 0x04
  push bc
  ld b,0x04
  call expect
  pop bc
  inc c
  ld a,c
  cp 10
  jr nz,1b
  ; 3. STAT interrupt counts per frame
  ld a,80
  ldh (rLYC),a
  ld hl,SCRATCH+3
  ld de,stat_sources
2:
  ld a,(de)
  inc de
  or a
  jr z,3f
  push de
  call count_stat_frame
  ld (hl+),a
  call mix_a
  pop de
  jr 2b
3:
  ld a,(SCRATCH+3)
  sub a,142
  cp 5
  ld c,10
  call nc,fail
  ld a,(SCRATCH+6)
  ld b,1
  ld c,11
  call expect
  ; 4. LCD off / on
  call lcd_off
  ldh a,(rLY)
  ld b,0
  ld c,12
  call expect
  ldh a,(rSTAT)
  and 3
  ld c,13
  call expect
  ld a,0x93
  ldh (rLCDC),a
  ld b,10
  call wait_ly           ; returns only if LY reaches 10 (a hang fails the test's progress check)
  ldh a,(rLY)
  ld b,10
  ld c,14
  call expect
  ; 5. mode 3 vs SCX, then with sprites
  ld hl,TABLE
  ld e,0
4:
  ld a,e
  ldh (rSCX),a
  call measure_mode3
  ld (hl+),a
  call mix_a
  inc e
  ld a,e
  cp 8
  jr nz,4b
  xor a
  ldh (rSCX),a
  call wait_vblank
  ld hl,0xFE00           ; 10 sprites on lines 30-37 (OAM y 46)
  ld b,10
5:
  ld a,46
  ld (hl+),a
  ld a,b
  add a,a
  add a,a
  add a,a
  add a,a
  ld (hl+),a
  ld a,T_SOLID
  ld (hl+),a
  xor a
  ld (hl+),a
  dec b
  jr nz,5b
  call measure_mode3
  ld (TABLE+8),a
  call mix_a
  call wait_vblank
  call clear_oam_vblank
  call vram_oam_access
  call end_pass_unchecked
  jp pass

; wait_ly: polls until LY == B.
wait_ly:
  ldh a,(rLY)
  cp b
  jr nz,wait_ly
  ret

; count_mode: polls while STAT mode != D, then counts iterations while mode == D into (HL++);
; id C fails if the mode was never seen within 255 polls.
count_mode:
  ld e,0
1:
  ldh a,(rSTAT)
  and 3
  cp d
  jr z,2f
  dec e
  jr nz,1b
  call fail
  ret
2:
  ld e,0
3:
  inc e
  ldh a,(rSTAT)
  and 3
  cp d
  jr z,3b
  ld a,e
  ld (hl+),a
  jp mix_a

; count_stat_frame: STAT = A (one source), IE = STAT, counts STAT interrupts for one frame
; (from VBlank to VBlank); returns the count in A.
count_stat_frame:
  ld b,a
  call wait_vblank
  di
  ld a,b
  ldh (rSTAT),a
  xor a
  ld (IRQ_COUNT+1),a
  ldh (rIF),a
  ld a,0x02
  ldh (rIE),a
  ei
  call wait_vblank
  di
  xor a
  ldh (rSTAT),a
  ldh (rIE),a
  ld a,(IRQ_COUNT+1)
  ret

; measure_mode3: polling iterations while in mode 3 on line 30.
measure_mode3:
  ld b,30
  call wait_ly
1:
  ldh a,(rSTAT)
  and 3
  cp 3
  jr z,1b                ; (we may arrive during line 30's mode 3: wait for the next one)
2:
  ldh a,(rSTAT)
  and 3
  cp 3
  jr nz,2b
  ld b,0
3:
  inc b
  ldh a,(rSTAT)
  and 3
  cp 3
  jr z,3b
  ld a,b
  ret

clear_oam_vblank:
  ld hl,0xFE00
  ld b,40
  xor a
1:
  ld (hl+),a
  inc l
  inc l
  inc l
  dec b
  jr nz,1b
  ret

lyc_values:
  .db 0, 1, 80, 143, 144, 153
stat_sources:
  .db 0x08, 0x20, 0x10, 0x40, 0

; wait_mode: polls until the STAT mode is D (the LCD is on, so every mode comes round).
wait_mode:
  ldh a,(rSTAT)
  and 3
  cp d
  jr nz,wait_mode
  ret

vram_oam_access:
  call wait_vblank
  ld a,0x5A
  ld (0x9BFF),a
  ld a,0x3C
  ld (0xFE9F),a
  ld hl,SCRATCH+0x20
  ld b,60
  call wait_ly
  ld d,3
  call wait_mode
  ld a,(0x9BFF)          ; mode 3
  ld (hl+),a
  ld a,(0xFE9F)
  ld (hl+),a
  push hl
  ld hl,0x9BFF
  ld a,(hl)
  pop hl
  ld (hl+),a
  ld b,70
  call wait_ly
  ld d,2
  call wait_mode
  ld a,(0xFE9F)          ; mode 2
  ld (hl+),a
  ld b,80
  call wait_ly
  ld d,3
  call wait_mode
  push hl
  ld hl,0x9BFF
  ld (hl),0x77           ; writes in mode 3
  ld hl,0xFE9F
  ld (hl),0x66
  pop hl
  ld b,90
  call wait_ly
  ld d,2
  call wait_mode
  ld a,0x55
  ld (0xFE9E),a          ; write in mode 2
  call wait_vblank
  ld a,(0x9BFF)
  ld (hl+),a
  ld a,(0xFE9F)
  ld (hl+),a
  ld a,(0xFE9E)
  ld (hl+),a
  ld hl,SCRATCH+0x20
  ld b,7
1:
  ld a,(hl+)
  call mix_a
  dec b
  jr nz,1b
  xor a
  ld (0xFE9E),a
  ld (0xFE9F),a
  ret
