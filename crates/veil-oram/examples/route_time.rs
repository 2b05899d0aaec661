use rand::seq::SliceRandom;
use rand::SeedableRng;
fn main() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    for (r, c) in [(64usize, 65usize), (512, 513)] {
        let mut d: Vec<u32> = (0..(r * c) as u32).collect();
        d.shuffle(&mut rng);
        let t = std::time::Instant::now();
        let _ = veil_oram::clos::route(r, c, &d);
        println!("{r}x{c}: {:.2} ms", t.elapsed().as_secs_f64() * 1e3);
    }
}
