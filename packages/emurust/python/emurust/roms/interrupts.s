; @header cart=0x00 rom=0x00 ram=0x00 title=INTERRUPTS
; interrupts.s: the five interrupt sources, priorities, IE/IF reads and writes, EI/DI timing.
;
; Handlers are the shared counting ones (include/header.inc, lib.inc): IRQ_COUNT[5] and the
; IRQ_LOG ring record which interrupts were dispatched, in order. One pass:
;  1. IF = 0x1F with IE = 0x1F: dispatch order 0,1,2,3,4 (ids 1-5)
;  2. IE = 0x04 masks the others: only Timer taken, IF keeps 0x1B (ids 6-7)
;  3. IF/IE read-back: IF reads | 0xE0, IE reads what was written (ids 8-10)
;  4. EI then DI at once: no dispatch; EI; NOP: dispatch (ids 11-12)
;  5. real sources: VBlank (LY = 144 after wake-up), STAT LYC=0x40 (LY = 0x40), Timer overflow,
;     Serial internal clock (SB = 0xFF, SC bit 7 cleared) (ids 13-20)
;  6. VBlank and Timer both pending with IE = 0: enabling both dispatches VBlank first (ids 21-23)
;  8. (before 7) dispatch with SP = 0: the high-byte push writes IE; from 0xC180 (0xC1 keeps
;     VBlank) it is dispatched and RETI returns through IE (ids 24-26); from 0xD000 (0xD0 drops
;     it) PyBoy cancels: PC = 0 (rst0_entry counts CANCEL_SEEN), no handler, IF kept (ids 27-29)
;  7. an idle stretch with IME on and IE = 0x1F (Joypad interrupts from pressed buttons count)
; Timing-dependent observations (loop counts) go to SCRATCH (0xC010..) and the checksum;
; passes use end_pass_unchecked (start phases differ from pass to pass).
.include "include/header.inc"

.equ WAITS, SCRATCH      ; 0xC010..: polling iterations until each real source fired

main:
  ld a,0x91
  ldh (rLCDC),a
  ld hl,ie_push_routine
  ld de,0xC180
  ld bc,ie_push_routine_end-ie_push_routine
  call memcpy
  ld hl,ie_push_routine
  ld de,0xD000
  ld bc,ie_push_routine_end-ie_push_routine
  call memcpy
pass:
  ; 1. all five pending, all enabled: priority order
  di
  call log_reset
  ld a,0x1F
  ldh (rIE),a
  ldh (rIF),a
  ei
  nop
  nop
  di
  ld hl,IRQ_LOG
  ld c,1
  ld b,0
1:
  ld a,(hl+)
  call expect
  inc b
  inc c
  ld a,b
  cp 5
  jr nz,1b
  ; 2. IE masks
  call log_reset
  ld a,0x04
  ldh (rIE),a
  ld a,0x1F
  ldh (rIF),a
  ei
  nop
  nop
  di
  ld a,(IRQ_LOGIDX)
  ld b,1
  ld c,6
  call expect
  ldh a,(rIF)
  ld b,0xFB              ; 0xE0 | 0x1B
  ld c,7
  call expect
  call mix_a
  ; 3. read-back
  xor a
  ldh (rIF),a
  ldh a,(rIF)
  ld b,0xE0
  ld c,8
  call expect
  ld a,0x15
  ldh (rIF),a
  ldh a,(rIF)
  ld b,0xF5
  ld c,9
  call expect
  ld a,0x1F
  ldh (rIE),a
  ldh a,(rIE)
  ld b,0x1F
  ld c,10
  call expect
  ; 4. EI then DI: the EI delay means nothing is dispatched; EI then NOP dispatches
  call log_reset
  ld a,0x04
  ldh (rIE),a
  ldh (rIF),a
  ei
  di
  ld a,(IRQ_LOGIDX)
  ld b,0
  ld c,11
  call expect
  ei
  nop
  di
  ld a,(IRQ_LOGIDX)
  ld b,1
  ld c,12
  call expect
  ; 5a. VBlank
  call log_reset
  xor a
  ldh (rSTAT),a
  ldh (rIF),a
  ld a,0x01
  ldh (rIE),a
  ei
  halt
  nop
  di
  ldh a,(rLY)
  ld b,144
  ld c,13
  call expect
  ld a,(IRQ_COUNT)
  ld b,1
  ld c,14
  call expect
  ; 5b. STAT on LY = LYC = 0x40
  call log_reset
  ld a,0x40
  ldh (rLYC),a
  ldh (rSTAT),a          ; LYC=LY interrupt source only
  xor a
  ldh (rIF),a
  ld a,0x02
  ldh (rIE),a
  ei
  halt
  nop
  di
  ldh a,(rLY)
  ld b,0x40
  ld c,15
  call expect
  ld a,(IRQ_COUNT+1)
  ld b,1
  ld c,16
  call expect
  xor a
  ldh (rSTAT),a
  ; 5c. Timer overflow (TAC 0x05: 16 cycles per tick), polled with a counter
  call log_reset
  xor a
  ldh (rTMA),a
  ldh (rIF),a
  ld a,0xF0
  ldh (rTIMA),a
  ld a,0x05
  ldh (rTAC),a
  ld a,0x04
  ldh (rIE),a
  ld b,0
  ei
2:
  ld a,(IRQ_COUNT+2)
  or a
  jr nz,3f
  inc b
  jr nz,2b
3:
  di
  ld a,b
  ld (WAITS),a
  call mix_a
  ld a,(IRQ_COUNT+2)
  ld b,1
  ld c,17
  call expect
  xor a
  ldh (rTAC),a
  ; 5d. Serial with the internal clock: no partner, so 0xFF comes in
  call log_reset
  xor a
  ldh (rIF),a
  ld a,0x55
  ldh (rSB),a
  ld a,0x81
  ldh (rSC),a
  ld a,0x08
  ldh (rIE),a
  ld b,0
  ld d,0
  ei
4:
  ld a,(IRQ_COUNT+3)
  or a
  jr nz,5f
  inc b
  jr nz,4b
  inc d
  jr nz,4b
5:
  di
  ld a,b
  ld (WAITS+1),a
  call mix_a
  ld a,d
  ld (WAITS+2),a
  call mix_a
  ld a,(IRQ_COUNT+3)
  ld b,1
  ld c,18
  call expect
  ldh a,(rSB)
  ld b,0xFF
  ld c,19
  call expect
  ldh a,(rSC)
  and 0x80
  ld b,0
  ld c,20
  call expect
  ; 6. VBlank and Timer both pending while IE = 0, then enable both: VBlank goes first
  call log_reset
  xor a
  ldh (rIE),a
  ld a,0xFF
  ldh (rTIMA),a
  ld a,0x05
  ldh (rTAC),a
  call wait_vblank       ; by now the timer overflowed too (hundreds of cycles)
  xor a
  ldh (rTAC),a
  ldh a,(rIF)
  and 0x05
  ld b,0x05
  ld c,21
  call expect
  ld a,0x05
  ldh (rIE),a
  ei
  nop
  nop
  di
  ld a,(IRQ_LOG)
  ld b,0
  ld c,22
  call expect
  ld a,(IRQ_LOG+1)
  ld b,2
  ld c,23
  call expect
  ; 8. the high-byte push of a dispatch lands in IE (SP = 0x0000): run from 0xC180 the pushed
  ; byte 0xC1 keeps VBlank enabled (dispatched, RETI returns through IE); run from 0xD000, 0xD0
  ; disables it and PyBoy cancels the dispatch: PC = 0, IME off, IF kept (rst0_entry catches it)
  ld a,(IRQ_COUNT)
  ld d,a
  xor a
  ldh (rIF),a
  inc a
  ldh (rIE),a
  ldh (rIF),a            ; VBlank pending
  call 0xC180
  ldh a,(rIE)
  ld b,0xC1
  ld c,24
  call expect
  ld a,(IRQ_COUNT)
  dec a
  ld b,d
  ld c,25
  call expect
  ldh a,(rIF)
  and 0x01
  ld b,0
  ld c,26
  call expect
  ld a,(CANCEL_SEEN)
  inc a
  ld e,a
  ld a,0x01
  ldh (rIE),a
  ldh (rIF),a
  ld (CANCEL_ARMED),a
  call 0xD000
  di
  ld a,(CANCEL_SEEN)
  ld b,e
  ld c,27
  call expect
  ld a,(IRQ_COUNT)
  dec a
  ld b,d
  ld c,28
  call expect            ; still only the one dispatch of the first run
  ldh a,(rIF)
  and 0x01
  ld b,0x01
  ld c,29
  call expect
  xor a
  ld (CANCEL_ARMED),a
  ldh (rIF),a
  ; 7. idle with everything enabled: VBlank, Joypad (buttons) interrupts just count
  xor a
  ldh (rIF),a
  ld a,0x30
  ldh (rP1),a            ; both lines deselected: presses still raise the joypad interrupt
  ld a,0x1F
  ldh (rIE),a
  ei
  ld b,4
6:
  halt
  nop
  ld a,(IRQ_COUNT)
  or a
  jr z,6b
  xor a
  ld (IRQ_COUNT),a
  dec b
  jr nz,6b
  di
  ld hl,IRQ_COUNT+4
  ld a,(hl)
  ld (WAITS+3),a         ; joypad interrupts taken so far in this pass (input-dependent)
  ld (hl),0
  call end_pass_unchecked
  jp pass

; Copied to 0xC180 and 0xD000: SP = 0 so that the dispatch's first push writes PC >> 8 into IE.
ie_push_routine:
  ld (CANCEL_SP),sp
  ld sp,0x0000
  ei
  nop                    ; the dispatch happens after this
  nop
  di
  ld a,(CANCEL_SP)
  ld l,a
  ld a,(CANCEL_SP+1)
  ld h,a
  ld sp,hl
  ret
ie_push_routine_end:

; log_reset: empty the interrupt log and the per-source counts (IRQ_COUNT+4, joypad, is kept).
log_reset:
  xor a
  ld (IRQ_LOGIDX),a
  ld (IRQ_COUNT),a
  ld (IRQ_COUNT+1),a
  ld (IRQ_COUNT+2),a
  ld (IRQ_COUNT+3),a
  ld hl,IRQ_LOG
  ld bc,8
  ld a,0xEE
  jp memset
