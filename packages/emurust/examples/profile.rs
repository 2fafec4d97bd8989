//! Profiling driver: `cargo run --release --example profile -- ROM FRAMES [render 0|1] [WARMUP]`.
//! Runs WARMUP frames (default 100: past the boot ROM's 64), then FRAMES frames of a ROM
//! (rendering every frame or never) in `measured`, and prints frames/s; meant for `perf record`
//! and `valgrind --tool=callgrind --toggle-collect='*measured*'`.
use std::time::Instant;

use emurust::frame::Emulator;

#[inline(never)]
fn measured(emu: &mut Emulator, frames: u64, render: bool) {
    for _ in 0..frames {
        emu.tick_frame(render, false).expect("tick");
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // the test ROMs are built into the user cache (`python -m emurust.tools.build_roms` prints
    // the folder), so the ROM is always named
    let rom_path = args.get(1).map(String::as_str).unwrap_or_else(|| {
        eprintln!("usage: profile ROM [FRAMES] [render 0|1] [WARMUP]");
        std::process::exit(2)
    });
    let frames: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let render = args.get(3).map(|s| s == "1").unwrap_or(false);
    let warmup: u64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(100);
    let rom = std::fs::read(rom_path).expect("read ROM");
    let mut emu = Emulator::new(&rom, None, None).expect("load ROM");
    for _ in 0..warmup {
        emu.tick_frame(false, false).expect("tick");
    }
    let t0 = Instant::now();
    measured(&mut emu, frames, render);
    let dt = t0.elapsed().as_secs_f64();
    let r = emu.registers();
    println!(
        "{rom_path}: {frames} frames render={render} in {dt:.3} s = {:.0} frames/s (PC {:04X} \
         cycles {}, polling iterations skipped {})",
        frames as f64 / dt,
        r[8],
        emu.mb.cpu.cycles,
        emu.mb.watch.skipped
    );
}
