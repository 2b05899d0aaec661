"""CHOCO-TACO: the client's HE encryption/decryption accelerator.

`datapath` runs TACO's blocks (the Rust crate `veil-he-taco`) on SEAL's own keys and
ciphertexts and returns per-block operation counts; `units` is the 45 nm cost table;
`design` turns counts into time, energy, power and area for every configuration of the
design space and picks the paper's operating point; `client` is the i.MX6 software model.
"""
