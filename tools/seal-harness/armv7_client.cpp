// The client whose instructions Veil counted on ARMv7 (python/veil/he/taco/armv7.py): SEAL's
// BFV public-key encryption and decryption at one parameter set, run under qemu-arm with the
// counting plugin (insn_count.c). Three runs per set; one operation = (run - setup) / 10.
//
//   armv7_client setup N BITS   context, keys from a fixed BLAKE2Xb seed, the plaintext; nothing
//                               more (the prefix every run shares)
//   armv7_client enc N BITS     the same, then 10 Encryptor::encrypt calls; the last decrypts
//   armv7_client dec N BITS     the same, one encryption, then 10 Decryptor::decrypt calls
//
// This follows armv7.py's description of the runs (setup: nothing after the keys; each other
// run checks the plaintext decrypts), so (run - setup) / 10 keeps that check: a tenth of a
// decryption in one encryption, a tenth of an encryption in one decryption. The original
// client's source was not kept; regenerate.sh reports how close this one comes.
// BITS is a comma-separated list of coefficient-modulus prime sizes (e.g. 43,43,44); the
// plaintext modulus is PlainModulus::Batching(N, 20). Exit status 1 on a wrong decryption.
//
// Copyright Veil contributors. Licensed under the Apache License, Version 2.0. Uses Microsoft
// SEAL (MIT licence) through its public API only.

#include <seal/seal.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace
{
    constexpr int kReps = 10;
    const seal::prng_seed_type kSeed = { 0x0123456789abcdefULL, 1, 2, 3, 4, 5, 6, 0xfedcba9876543210ULL };

    std::vector<int> parse_bits(const std::string &s)
    {
        std::vector<int> out;
        std::stringstream in(s);
        std::string item;
        while (std::getline(in, item, ','))
        {
            out.push_back(std::atoi(item.c_str()));
        }
        return out;
    }

    bool same(const seal::Plaintext &a, const seal::Plaintext &b, std::size_t n)
    {
        for (std::size_t i = 0; i < n; i++)
        {
            std::uint64_t x = i < a.coeff_count() ? a[i] : 0;
            std::uint64_t y = i < b.coeff_count() ? b[i] : 0;
            if (x != y)
            {
                return false;
            }
        }
        return true;
    }
} // namespace

int main(int argc, char **argv)
{
    if (argc != 4)
    {
        std::cerr << "usage: armv7_client setup|enc|dec N BITS\n";
        return 2;
    }
    const std::string mode = argv[1];
    const std::size_t n = std::strtoul(argv[2], nullptr, 10);
    if (mode != "setup" && mode != "enc" && mode != "dec")
    {
        std::cerr << "armv7_client: mode " << mode << " is not setup, enc or dec\n";
        return 2;
    }

    seal::EncryptionParameters parms(seal::scheme_type::bfv);
    parms.set_poly_modulus_degree(n);
    parms.set_coeff_modulus(seal::CoeffModulus::Create(n, parse_bits(argv[3])));
    parms.set_plain_modulus(seal::PlainModulus::Batching(n, 20));
    parms.set_random_generator(std::make_shared<seal::Blake2xbPRNGFactory>(kSeed));
    seal::SEALContext context(parms);
    if (!context.parameters_set())
    {
        std::cerr << "armv7_client: SEAL refuses the parameters: " << context.parameter_error_message() << "\n";
        return 2;
    }
    const std::uint64_t t = parms.plain_modulus().value();

    seal::KeyGenerator keygen(context);
    seal::PublicKey pk;
    keygen.create_public_key(pk);
    seal::Encryptor encryptor(context, pk);
    seal::Decryptor decryptor(context, keygen.secret_key());

    seal::Plaintext plain(n);
    for (std::size_t i = 0; i < n; i++)
    {
        plain[i] = (7919 * i + 3) % t;
    }
    // Each run's own check: the plaintext decrypts (enc: the last of its ciphertexts; dec: the
    // ciphertext it decrypts ten times, made by one encryption). The setup run stops before.
    bool ok = true;
    if (mode == "enc")
    {
        std::vector<seal::Ciphertext> cts(kReps);
        for (auto &c : cts)
        {
            encryptor.encrypt(plain, c);
        }
        seal::Plaintext back;
        decryptor.decrypt(cts.back(), back);
        ok = same(back, plain, n);
    }
    else if (mode == "dec")
    {
        seal::Ciphertext ct;
        encryptor.encrypt(plain, ct);
        std::vector<seal::Plaintext> pts(kReps);
        for (auto &p : pts)
        {
            decryptor.decrypt(ct, p);
        }
        ok = same(pts.front(), plain, n) && same(pts.back(), plain, n);
    }
    std::cout << mode << ' ' << n << ' ' << argv[3] << (ok ? " ok" : " WRONG") << '\n';
    return ok ? 0 : 1;
}
