// Known answers from SEAL itself for Veil's TACO datapath (crates/veil-he-taco/tests/data/
// seal_4.4.3_kat.json). For each of SEAL's PRNG types, every PRNG SEAL creates starts from one
// fixed seed (the factory's default seed), so the stream, the samples, the keys and both
// ciphertexts are reproducible; the Rust datapath must match every number.
//
// Output: one line of JSON on stdout, in the committed file's layout (keys in this order,
// ", " and ": " between entries, numbers in lists without spaces). Exit status 1 if SEAL does
// not decrypt its own ciphertexts.
//
// Copyright Veil contributors. Licensed under the Apache License, Version 2.0. Uses Microsoft
// SEAL (MIT licence) through its installed headers only.

#include <seal/seal.h>
#include <seal/util/rlwe.h>

#include <cstdint>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace
{
    using u64 = std::uint64_t;

    // The seed every PRNG starts from, and the BFV parameters (security check off so the
    // vectors stay small).
    const seal::prng_seed_type kSeed = { 0x0123456789abcdefULL, 1, 2, 3, 4, 5, 6, 0xfedcba9876543210ULL };
    constexpr std::size_t kN = 256;
    constexpr u64 kT = 65537;
    const std::vector<int> kBits = { 30, 30, 31 };
    constexpr std::size_t kStreamBytes = 4200; // crosses the PRNG's 4096-byte refill

    template <class It>
    std::string list(It begin, It end)
    {
        std::ostringstream o;
        o << '[';
        for (It it = begin; it != end; ++it)
        {
            o << (it == begin ? "" : ",") << static_cast<u64>(*it);
        }
        o << ']';
        return o.str();
    }

    std::string list(const std::vector<u64> &v)
    {
        return list(v.cbegin(), v.cend());
    }

    // The plaintext every case encrypts: m_i = (7919 i + 3) mod t.
    seal::Plaintext fixed_plain()
    {
        seal::Plaintext p(kN);
        for (std::size_t i = 0; i < kN; i++)
        {
            p[i] = (7919 * i + 3) % kT;
        }
        return p;
    }

    bool same_plain(const seal::Plaintext &a, const seal::Plaintext &b)
    {
        for (std::size_t i = 0; i < kN; i++)
        {
            u64 x = i < a.coeff_count() ? a[i] : 0;
            u64 y = i < b.coeff_count() ? b[i] : 0;
            if (x != y)
            {
                return false;
            }
        }
        return true;
    }

    std::string one_case(const std::shared_ptr<seal::UniformRandomGeneratorFactory> &factory, bool &decrypts)
    {
        seal::EncryptionParameters parms(seal::scheme_type::bfv);
        parms.set_poly_modulus_degree(kN);
        parms.set_coeff_modulus(seal::CoeffModulus::Create(kN, kBits));
        parms.set_plain_modulus(kT);
        parms.set_random_generator(factory);
        seal::SEALContext context(parms, true, seal::sec_level_type::none);
        if (!context.parameters_set())
        {
            std::cerr << "SEAL refuses the parameters: " << context.parameter_error_message() << "\n";
            std::exit(2);
        }
        const std::size_t k = parms.coeff_modulus().size();

        std::vector<unsigned char> stream(kStreamBytes);
        factory->create()->generate(stream.size(), reinterpret_cast<seal::seal_byte *>(stream.data()));
        // each sampler from a fresh PRNG, over the key-level primes
        std::vector<u64> uniform(kN * k), ternary(kN * k), cbd(kN * k);
        seal::util::sample_poly_uniform(factory->create(), parms, uniform.data());
        seal::util::sample_poly_ternary(factory->create(), parms, ternary.data());
        seal::util::sample_poly_cbd(factory->create(), parms, cbd.data());

        seal::KeyGenerator keygen(context);
        const seal::SecretKey &sk = keygen.secret_key();
        seal::PublicKey pk;
        keygen.create_public_key(pk);

        const seal::Plaintext plain = fixed_plain();
        seal::Encryptor encryptor(context, pk, sk);
        seal::Ciphertext ct_pk, ct_sym;
        encryptor.encrypt(plain, ct_pk);
        encryptor.encrypt_symmetric(plain, ct_sym);
        seal::Decryptor decryptor(context, sk);
        seal::Plaintext back_pk, back_sym;
        decryptor.decrypt(ct_pk, back_pk);
        decryptor.decrypt(ct_sym, back_sym);
        decrypts = same_plain(back_pk, plain) && same_plain(back_sym, plain);

        std::vector<u64> primes;
        for (const auto &q : parms.coeff_modulus())
        {
            primes.push_back(q.value());
        }
        const auto &pkd = pk.data();
        const auto &skd = sk.data();
        std::ostringstream o;
        o << "{\"seed\": " << list(kSeed.cbegin(), kSeed.cend()) << ", \"n\": " << kN << ", \"t\": " << kT
          << ", \"primes\": " << list(primes) << ", \"stream_bytes\": " << list(stream.cbegin(), stream.cend())
          << ", \"uniform\": " << list(uniform) << ", \"ternary\": " << list(ternary) << ", \"cbd\": " << list(cbd)
          << ", \"pk\": " << list(pkd.data(), pkd.data() + pkd.dyn_array().size())
          << ", \"sk\": " << list(skd.data(), skd.data() + skd.coeff_count())
          << ", \"plain\": " << list(plain.data(), plain.data() + plain.coeff_count())
          << ", \"ct_pk\": " << list(ct_pk.data(), ct_pk.data() + ct_pk.dyn_array().size())
          << ", \"ct_sym\": " << list(ct_sym.data(), ct_sym.data() + ct_sym.dyn_array().size())
          << ", \"seal_decrypts\": " << (decrypts ? "true" : "false") << "}";
        return o.str();
    }
} // namespace

int main()
{
    bool ok_b = false, ok_s = false;
    const std::string b = one_case(std::make_shared<seal::Blake2xbPRNGFactory>(kSeed), ok_b);
    const std::string s = one_case(std::make_shared<seal::Shake256PRNGFactory>(kSeed), ok_s);
    std::cout << "{\"seal_version\": \"" << SEAL_VERSION << "\", \"blake2xb\": " << b << ", \"shake256\": " << s
              << "}\n";
    return ok_b && ok_s ? 0 : 1;
}
