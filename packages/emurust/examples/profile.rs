//! Profiling driver: `cargo run --release --example profile -- ROM FRAMES [render 0|1]`.
//! Runs FRAMES frames of a ROM (rendering every frame or never) and prints frames/s; meant for
//! `perf record` / `valgrind --tool=callgrind`.
use std::time::Instant;

use emurust::frame::Emulator;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rom_path = args.get(1).map(String::as_str).unwrap_or("roms/build/game.gb");
    let frames: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let render = args.get(3).map(|s| s == "1").unwrap_or(false);
    let rom = std::fs::read(rom_path).expect("read ROM");
    let mut emu = Emulator::new(&rom, None, None).expect("load ROM");
    let t0 = Instant::now();
    for _ in 0..frames {
        emu.tick_frame(render, false).expect("tick");
    }
    let dt = t0.elapsed().as_secs_f64();
    let r = emu.registers();
    println!(
        "{rom_path}: {frames} frames render={render} in {dt:.3} s = {:.0} frames/s (PC {:04X} cycles {})",
        frames as f64 / dt,
        r[8],
        emu.mb.cpu.cycles
    );
}
