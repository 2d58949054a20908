fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("dir"));
    let n: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    for _ in 0..n {
        let t = std::time::Instant::now();
        let r = mandate_core::orchestration::trace::verify(&dir).expect("verify");
        eprintln!(
            "{:?} records {} ranges {} intact {}",
            t.elapsed(),
            r.records,
            r.ranges,
            r.intact
        );
    }
}
