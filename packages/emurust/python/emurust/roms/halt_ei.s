; @header cart=0x00 rom=0x00 ram=0x00 title=HALT_EI
; halt_ei.s: HALT with IME on and off (incl. the halt bug), EI delay, DI/EI sequences, STOP.
;
; The timer (TAC 0x05, TIMA from 0xF0: overflow after about 256 cycles) provides a wake-up source.
; One pass, results at SCRATCH (0xC010..) and in the checksum:
;  1. IME=1 (EI; NOP; HALT), timer interrupt: dispatched once, execution continues after HALT
;     (ids 1-2; count and expected count at 0xC010/0xC011)
;  2. IME=0, nothing pending, HALT: wakes when IF&IE becomes set, no dispatch, IF stays (ids 3-4)
;  3. IME=0 with an interrupt already pending: HALT does not halt. On hardware the next byte
;     (INC B) runs twice (halt bug); PyBoy 2.8.1 (cpu.py: the HALT escape adds 1 to PC) runs it
;     once: id 5 expects PyBoy's 1 (B delta at 0xC012)
;  4. EI; HALT with an interrupt pending: PyBoy returns from the handler to the HALT
;     (halted_during_ei) and halts again until the next interrupt (count at 0xC013, mixed)
;  5. EI delay: EI; DI dispatches nothing (id 6); EI; EI; DI dispatches (IME is on after the
;     second EI, id 7); EI; NOP dispatches (id 8); RETI enables at once (id 9)
;  6. STOP followed by 0x00 acts as a 2-byte instruction here (no buttons are pressed on purpose
;     and PyBoy does not stop): the code after it runs (id 10)
.include "include/header.inc"

main:
pass:
  ; 1. IME=1 HALT
  call timer_arm
  ld a,0x04
  ldh (rIE),a
  ld a,(IRQ_COUNT+2)
  inc a
  ld d,a
  ei
  nop                    ; not EI;HALT (that case is 4.): IME is on when HALT runs
  halt
  ld e,0x5A              ; must run after the handler returns
  di
  ld a,(IRQ_COUNT+2)
  ld (SCRATCH),a
  ld a,d
  ld (SCRATCH+1),a
  ld a,(IRQ_COUNT+2)
  ld b,d
  ld c,1
  call expect
  ld a,e
  ld b,0x5A
  ld c,2
  call expect
  ; 2. IME=0 HALT, nothing pending
  call timer_arm
  ld a,(IRQ_COUNT+2)
  ld d,a
  halt
  nop
  ld a,(IRQ_COUNT+2)
  ld b,d
  ld c,3
  call expect
  ldh a,(rIF)
  and 0x04
  ld b,0x04
  ld c,4
  call expect
  ; 3. halt bug: IME=0, pending, HALT then INC B
  ld a,0x04
  ldh (rIF),a
  ld b,0
  halt
  inc b
  ld a,b
  ld (SCRATCH+2),a
  call mix_a
  ld b,1                 ; PyBoy 2.8.1: once (hardware: twice)
  ld c,5
  call expect
  ; 4. EI; HALT with a pending interrupt
  ld a,0x04
  ldh (rIF),a
  ld a,(IRQ_COUNT+2)
  ld d,a
  ei
  halt
  nop
  di
  ld a,(IRQ_COUNT+2)
  sub a,d
  ld (SCRATCH+3),a
  call mix_a
  ; 5. EI delay
  xor a
  ld (IRQ_LOGIDX),a
  ld a,0x04
  ldh (rIF),a
  ei
  di
  ld a,(IRQ_LOGIDX)
  ld b,0
  ld c,6
  call expect
  ei
  ei                     ; IME is on after this second EI: dispatched before the DI
  di
  ld a,(IRQ_LOGIDX)
  ld b,1
  ld c,7
  call expect
  ld a,0x04
  ldh (rIF),a
  ei
  nop
  di
  ld a,(IRQ_LOGIDX)
  ld b,2
  ld c,8
  call expect
  ld a,0x04
  ldh (rIF),a
  call do_reti           ; RETI sets IME: the pending timer interrupt is taken right after
  di
  ld a,(IRQ_LOGIDX)
  ld b,3
  ld c,9
  call expect
  ; 6. STOP + 0x00
  xor a
  ldh (rIE),a
  ldh (rIF),a
  ld e,0
  stop
  .db 0x00
  ld e,0xA5
  ld a,e
  ld b,0xA5
  ld c,10
  call expect
  xor a
  ldh (rTAC),a
  call wait_vblank       ; one pass per frame (keeps the u16 pass counter meaningful)
  call end_pass_unchecked
  jp pass

do_reti:
  reti

; timer_arm: IF = 0, TIMA = 0xF0, TMA = 0, TAC = 0x05 (16 cycles per tick), IE = Timer.
timer_arm:
  xor a
  ldh (rTAC),a
  ldh (rTMA),a
  ldh (rIF),a
  ld a,0xF0
  ldh (rTIMA),a
  ld a,0x05
  ldh (rTAC),a
  ld a,0x04
  ldh (rIE),a
  ret
