; @header cart=0x00 rom=0x00 ram=0x00 title=TIMER
; timer.s: DIV, TIMA, TMA, TAC at every rate and around every edge.
;
; Each experiment resets DIV first (which fixes the phase of the 16-bit system counter), then waits
; k*4 cycles (k = 0..63, a NOP sled) before the access under test, and mixes what it reads into
; the checksum, so passes are deterministic (end_pass checks that) and every cycle offset of the
; edges is visited:
;  - DIV write while the TAC-selected counter bit is 1 (falling edge -> extra TIMA tick)
;  - TIMA overflow: TIMA reads 0 then TMA, IF bit 2 (reload window)
;  - TMA write during the reload window, TIMA write during/after it
;  - TAC writes that change the selected bit or disable the timer (the "TAC glitch")
; Self-checks (ids 1-7): tick counts about 1100 cycles after the start, per rate, within a few
; ticks (4: 0-2, 5: 66-71, 6: 16-19, 7: 3-5), DIV count,
; TAC disabled freezes TIMA.
.include "include/header.inc"

.equ K, SCRATCH          ; sweep number in this pass
.equ RATES, SCRATCH+1    ; 0xC011..0xC015: TIMA after the fixed delay for TAC 4,5,6,7; DIV

main:
pass:
  xor a
  ld (K),a
  ld hl,exp_div_edge
  call sweep
  ld hl,exp_overflow
  call sweep
  ld hl,exp_tma_write
  call sweep
  ld hl,exp_tima_write
  call sweep
  ld hl,exp_tac_glitch
  call sweep
  ld hl,exp_tac_off
  call sweep
  call rates
  call end_pass
  jp pass

; sweep: calls the experiment at HL with C = k for k = 0..63. The checksum of the pass so far is
; then copied to TABLE + 2 * (sweep number) (diagnostics: which experiment differs).
sweep:
  ld c,0
1:
  push hl
  push bc
  call jp_hl
  pop bc
  pop hl
  inc c
  ld a,c
  cp 64
  jr nz,1b
  ld a,(K)
  inc a
  ld (K),a
  add a,a
  ld l,a
  ld h,TABLE>>8
  ld a,(RES_CHK)
  ld (hl+),a
  ld a,(RES_CHK+1)
  ld (hl),a
  ret
jp_hl:
  jp (hl)

; sled: executes A NOPs (A <= 128), then returns (constant overhead otherwise). Clobbers HL, B.
sled:
  ld b,a
  ld hl,sled_end
  ld a,l
  sub a,b
  ld l,a
  ld a,h
  sbc a,0
  ld h,a
  jp (hl)
  .fill 128,1,0x00
sled_end:
  ret

; start_timer: TAC off, DIV reset (while the timer is off, so the reset cannot tick TIMA: that
; would depend on the previous phase), IF = 0, TIMA = D, TMA = E, then TAC = B. The counter phase
; at return is then fixed relative to the instructions.
start_timer:
  xor a
  ldh (rTAC),a
  ldh (rDIV),a
  ldh (rIF),a
  ld a,d
  ldh (rTIMA),a
  ld a,e
  ldh (rTMA),a
  ld a,b
  ldh (rTAC),a
  ret

exp_div_edge:
  ld d,0x00
  ld e,0x00
  ld b,0x05
  push bc
  call start_timer
  pop bc
  ld a,c
  call sled
  ldh (rDIV),a
  ldh a,(rTIMA)
  jp mix_a

exp_overflow:
  ld d,0xFE
  ld e,0xAB
  ld b,0x05
  push bc
  call start_timer
  pop bc
  ld a,c
  call sled
  ldh a,(rTIMA)
  call mix_a
  ldh a,(rIF)
  and 0x04               ; the LCD raises bits 0-1 at times unrelated to the experiment
  jp mix_a

exp_tma_write:
  ld d,0xFF
  ld e,0x10
  ld b,0x05
  push bc
  call start_timer
  pop bc
  ld a,c
  call sled
  ld a,0x20
  ldh (rTMA),a
  ldh a,(rTIMA)
  call mix_a
  ldh a,(rTIMA)
  jp mix_a

exp_tima_write:
  ld d,0xFF
  ld e,0x10
  ld b,0x05
  push bc
  call start_timer
  pop bc
  ld a,c
  call sled
  ld a,0x77
  ldh (rTIMA),a
  ldh a,(rTIMA)
  call mix_a
  ldh a,(rIF)
  and 0x04               ; the LCD raises bits 0-1 at times unrelated to the experiment
  jp mix_a

exp_tac_glitch:
  ld d,0x00
  ld e,0x00
  ld b,0x05
  push bc
  call start_timer
  pop bc
  ld a,c
  call sled
  ld a,0x06              ; bit 3 -> bit 5 of the counter
  ldh (rTAC),a
  ldh a,(rTIMA)
  call mix_a
  ld a,0x07              ; -> bit 7
  ldh (rTAC),a
  ldh a,(rTIMA)
  jp mix_a

exp_tac_off:
  ld d,0x00
  ld e,0x00
  ld b,0x07
  push bc
  call start_timer
  pop bc
  ld a,c
  add a,a                ; up to 126 NOPs
  call sled
  ld a,0x03              ; disable (keeps the rate bits)
  ldh (rTAC),a
  ldh a,(rTIMA)
  call mix_a
  ldh a,(rTAC)           ; reads | 0xF8
  jp mix_a

; delay1024: 64 x 16 cycles (DEC B 4 + JR taken 12) plus the tail.
delay1024:
  ld b,64
1:
  dec b
  jr nz,1b
  ret

.macro RATE tac, lo, width, id
  ld d,0
  ld e,0
  ld b,\tac
  call start_timer
  call delay1024
  ldh a,(rTIMA)
  ld (RATES+\tac-4),a
  call mix_a             ; (clobbers A)
  ld a,(RATES+\tac-4)
  sub a,\lo
  ld b,a
  ld a,\width
  cp b                   ; carry if TIMA - lo > width (also when TIMA < lo: wraps high)
  ld c,\id
  call c,fail
.endm

rates:
  RATE 4, 0, 2, 1        ; 1024 cycles per tick
  RATE 5, 66, 5, 2       ; 16 (about 1100 cycles from the TAC write to the read)
  RATE 6, 16, 3, 3       ; 64
  RATE 7, 3, 2, 4        ; 256
  ; DIV counts every 256 cycles
  xor a
  ldh (rTAC),a
  ldh (rDIV),a
  call delay1024
  ldh a,(rDIV)
  ld (RATES+4),a
  call mix_a
  ld a,(RATES+4)
  sub a,4
  ld b,a
  ld a,1
  cp b
  ld c,5
  call c,fail
  ; TAC disabled: TIMA frozen
  ld d,0x42
  ld e,0
  ld b,0x01
  call start_timer
  call delay1024
  ldh a,(rTIMA)
  ld b,0x42
  ld c,6
  call expect
  ; TMA reads back
  ld a,0x9C
  ldh (rTMA),a
  ldh a,(rTMA)
  ld b,0x9C
  ld c,7
  call expect
  xor a
  ldh (rTAC),a
  ret
