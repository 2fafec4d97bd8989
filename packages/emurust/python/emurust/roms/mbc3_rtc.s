; @header cart=0x10 rom=0x01 ram=0x03 title=MBC3_RTC
; mbc3_rtc.s: MBC3+TIMER+RAM+BATTERY: RTC registers, halt bit, latch, rollover, RAM banks.
;
; PyBoy advances the RTC with emulated cycles (4194304 per second), so the results below are
; deterministic. Not with rtc_lock_experimental(True): register writes are then ignored and
; latches read 0, so these self-checks fail by design in that mode. One pass:
;  1. halt (DH bit 6), write S=59 M=59 H=23 DL=0xFF DH=0x41, latch (0x6000: 0 then 1), read
;     back exactly (ids 1-5)
;  2. run (DH = 0x01), wait 70 frames (> 1 s), latch: everything rolled over: DL = 0,
;     DH = 0x80 (carry, day bit 8 clear), H = 0, M = 0 (ids 6-9); S at 0xC010
;  3. without a new latch the registers keep their latched value over 70 frames (id 10);
;     after 0 then 1 at 0x6000 the seconds moved on (id 11); S values at 0xC011/0xC012
;  4. RAM banks 0-3 next to the RTC registers (id 12)
.include "include/header.inc"

main:
  ld a,0x91
  ldh (rLCDC),a
pass:
  ld a,0x0A
  ld (0x0000),a          ; RAM and RTC enable
  ; 1. halted: exact read-back
  ld a,0x0C
  ld (0x4000),a
  ld a,0x40
  ld (0xA000),a          ; halt
  ld hl,rtc_values
  ld b,0x08
1:
  ld a,b
  ld (0x4000),a
  ld a,(hl+)
  ld (0xA000),a
  inc b
  ld a,b
  cp 0x0D
  jr nz,1b
  call latch
  ld hl,rtc_values
  ld b,0x08
  ld c,1
2:
  ld a,b
  ld (0x4000),a
  ld a,(0xA000)
  call mix_a
  push bc
  ld b,(hl)
  call expect
  pop bc
  inc hl
  inc c
  inc b
  ld a,b
  cp 0x0D
  jr nz,2b
  ; 2. run over the rollover
  ld a,0x0C
  ld (0x4000),a
  ld a,0x01
  ld (0xA000),a          ; running, day bit 8 set: 0x1FF days 23:59:59
  ld b,70
  call wait_frames
  call latch
  ld a,0x08
  ld (0x4000),a
  ld a,(0xA000)
  ld (SCRATCH),a
  call mix_a
  ld a,0x0B
  ld (0x4000),a
  ld a,(0xA000)
  ld b,0
  ld c,6
  call expect
  ld a,0x0C
  ld (0x4000),a
  ld a,(0xA000)
  ld b,0x80
  ld c,7
  call expect
  ld a,0x0A
  ld (0x4000),a
  ld a,(0xA000)
  ld b,0
  ld c,8
  call expect
  ld a,0x09
  ld (0x4000),a
  ld a,(0xA000)
  ld c,9
  call expect
  ; 3. latched values stay until the next latch
  ld a,0x08
  ld (0x4000),a
  ld a,(0xA000)
  ld (SCRATCH+1),a
  ld b,70
  call wait_frames
  ld a,(0xA000)
  ld hl,SCRATCH+1
  ld b,(hl)
  ld c,10
  call expect
  call latch
  ld a,(0xA000)
  ld (SCRATCH+2),a
  call mix_a
  cp b
  ld c,11
  call z,fail
  ; 4. RAM banks
  ld b,0
3:
  ld a,b
  ld (0x4000),a
  add a,0x60
  ld (0xA123),a
  inc b
  ld a,b
  cp 4
  jr nz,3b
  ld b,0
4:
  ld a,b
  ld (0x4000),a
  ld a,(0xA123)
  sub a,0x60
  ld c,12
  call expect
  inc b
  ld a,b
  cp 4
  jr nz,4b
  xor a
  ld (0x4000),a
  ld (0x0000),a
  call end_pass_unchecked
  jp pass

latch:
  xor a
  ld (0x6000),a
  inc a
  ld (0x6000),a
  ret

; wait_frames: B VBlanks (LCD on).
wait_frames:
  push bc
  call wait_vblank
  pop bc
  dec b
  jr nz,wait_frames
  ret

rtc_values:
  .db 59, 59, 23, 0xFF, 0x41
