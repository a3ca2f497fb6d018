// SHA-256 of a byte string as lowercase hex (OpenSSL's libcrypto): the build cache's keys,
// the run database's candidate hashes, the spec and kernel hashes in certificates.
#pragma once

#include <string>

namespace ollie {

std::string sha256_hex(const std::string& data);

}  // namespace ollie
