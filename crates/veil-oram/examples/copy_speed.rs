use std::time::Instant;
#[cfg(target_arch = "x86_64")]
fn nt_copy(dst: &mut [u8], src: &[u8]) {
    use std::arch::x86_64::*;
    assert_eq!(dst.len(), src.len());
    let n = dst.len() / 16 * 16;
    unsafe {
        if (dst.as_ptr() as usize) % 16 != 0 {
            dst.copy_from_slice(src);
            return;
        }
        let mut i = 0;
        while i < n {
            let v = _mm_loadu_si128(src.as_ptr().add(i) as *const __m128i);
            _mm_stream_si128(dst.as_mut_ptr().add(i) as *mut __m128i, v);
            i += 16;
        }
        _mm_sfence();
    }
    dst[n..].copy_from_slice(&src[n..]);
}
fn main() {
    let sz = 262160;
    let n = 2000;
    let mut dsts: Vec<Box<[u8]>> = (0..n).map(|_| vec![1u8; sz].into_boxed_slice()).collect();
    let src = vec![7u8; sz];
    for round in 0..3 {
        let t = Instant::now();
        for d in dsts.iter_mut() { d.copy_from_slice(&src); }
        let a = t.elapsed().as_secs_f64();
        let t = Instant::now();
        for d in dsts.iter_mut() { nt_copy(d, &src); }
        let b = t.elapsed().as_secs_f64();
        println!("round {round}: memcpy {:.1} GB/s, nt {:.1} GB/s", (n*sz) as f64/a/1e9, (n*sz) as f64/b/1e9);
    }
    // read copy: cold source into a hot buffer
    let mut hot = vec![0u8; sz];
    let t = Instant::now();
    for d in dsts.iter() { hot.copy_from_slice(d); }
    println!("cold->hot memcpy {:.1} GB/s", (n*sz) as f64/t.elapsed().as_secs_f64()/1e9);
}
