#include "tools/shapejit/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace shapejit::tools {

namespace {

const char kMagic[] = "\x93NUMPY";

// The value of `key` in the header's Python dict literal, as written.
Expected<std::string> dict_value(const std::string& header, const std::string& key, const std::string& name) {
  const std::string quoted = "'" + key + "'";
  size_t at = header.find(quoted);
  if (at == std::string::npos) return invalid(name + ": header has no '" + key + "'");
  size_t colon = header.find(':', at + quoted.size());
  if (colon == std::string::npos) return invalid(name + ": malformed header near '" + key + "'");
  size_t start = header.find_first_not_of(" ", colon + 1);
  if (start == std::string::npos) return invalid(name + ": malformed header near '" + key + "'");
  size_t end;
  if (header[start] == '\'') {
    end = header.find('\'', start + 1);
    if (end == std::string::npos) return invalid(name + ": malformed header near '" + key + "'");
    return header.substr(start + 1, end - start - 1);
  }
  if (header[start] == '(') {
    end = header.find(')', start);
    if (end == std::string::npos) return invalid(name + ": malformed header near '" + key + "'");
    return header.substr(start, end - start + 1);
  }
  end = header.find_first_of(",}", start);
  if (end == std::string::npos) return invalid(name + ": malformed header near '" + key + "'");
  return header.substr(start, end - start);
}

}  // namespace

Expected<ir::Tensor> parse_npy(const std::string& bytes, const std::string& name) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0) return invalid(name + ": not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, offset;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return invalid(name + ": truncated header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    offset = 12;
  } else {
    return invalid(name + ": unsupported .npy version " + std::to_string(major));
  }
  if (bytes.size() < offset + header_len) return invalid(name + ": truncated header");
  const std::string header = bytes.substr(offset, header_len);
  const std::string descr = SJ_TRY(dict_value(header, "descr", name));
  const std::string fortran = SJ_TRY(dict_value(header, "fortran_order", name));
  const std::string shape_text = SJ_TRY(dict_value(header, "shape", name));

  ir::DType dt;
  if (descr == "<f4") dt = ir::DType::kF32;
  else if (descr == "<f8") dt = ir::DType::kF64;
  else if (descr == "<i4") dt = ir::DType::kI32;
  else if (descr == "<i8") dt = ir::DType::kI64;
  else if (descr == "|b1") dt = ir::DType::kBool;
  else return invalid(name + ": dtype '" + descr + "' is not supported (<f4 <f8 <i4 <i8 |b1)");
  if (fortran != "False" && fortran != "True") return invalid(name + ": fortran_order must be True or False");

  // "(2, 3)", "(5,)" or "()": sizes of at most 18 digits (so each fits int64).
  if (shape_text.size() < 2 || shape_text.front() != '(' || shape_text.back() != ')') {
    return invalid(name + ": 'shape' must be a tuple of sizes, got '" + shape_text.substr(0, 40) + "'");
  }
  std::vector<int64_t> shape;
  {
    std::string inner = shape_text.substr(1, shape_text.size() - 2);
    std::stringstream ss(inner);
    std::string item;
    while (std::getline(ss, item, ',')) {
      size_t a = item.find_first_not_of(" "), b = item.find_last_not_of(" L");
      if (a == std::string::npos) continue;
      std::string digits = b >= a ? item.substr(a, b - a + 1) : std::string();
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 18) {
        return invalid(name + ": bad shape " + shape_text.substr(0, 80) + " (sizes are integers below 10^18)");
      }
      shape.push_back(std::stoll(digits));
    }
  }
  if (shape.size() > static_cast<size_t>(ir::kMaxRank)) {
    return invalid(name + ": rank " + std::to_string(shape.size()) + " is more than shapejit's " + std::to_string(ir::kMaxRank));
  }
  const std::optional<uint64_t> data_bytes = ir::dense_bytes_within(ir::dtype_size(dt), shape, uint64_t{1} << 62);
  if (!data_bytes) return invalid(name + ": shape " + shape_text.substr(0, 80) + " holds more than 2^62 bytes");
  const uint64_t need = *data_bytes;
  const size_t data_at = offset + header_len;
  if (need > bytes.size() - data_at) {
    return invalid(name + ": truncated: the header promises " + std::to_string(need) + " bytes of data, the file has " +
                   std::to_string(bytes.size() - data_at));
  }
  const int64_t numel = static_cast<int64_t>(need / ir::dtype_size(dt));
  ir::Tensor t = ir::Tensor::empty(dt, shape);
  if (fortran == "True" && shape.size() > 1 && numel > 0) {
    // Column-major data: read through Fortran strides, then make it dense.
    std::vector<int64_t> fstrides(shape.size());
    int64_t acc = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      fstrides[i] = acc;
      acc *= shape[i];
    }
    ir::Tensor raw = ir::Tensor::empty(dt, {numel});
    std::memcpy(raw.data(), bytes.data() + data_at, need);
    t.copy_from(raw.view(shape, fstrides));
  } else if (need > 0) {
    std::memcpy(t.data(), bytes.data() + data_at, need);
  }
  if (dt == ir::DType::kBool) {  // any non-zero byte is true; normalize so bool loads stay defined
    auto* p = static_cast<unsigned char*>(t.data());
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = p[i] != 0;
  }
  return t;
}

Expected<ir::Tensor> read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(Code::kIo, path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_npy(ss.str(), path);
}

std::string format_npy(const ir::Tensor& tensor) {
  ir::Tensor t = tensor.contiguous();
  const char* descr = "<f4";
  switch (t.dtype()) {
    case ir::DType::kF32: descr = "<f4"; break;
    case ir::DType::kF64: descr = "<f8"; break;
    case ir::DType::kI32: descr = "<i4"; break;
    case ir::DType::kI64: descr = "<i8"; break;
    case ir::DType::kBool: descr = "|b1"; break;
  }
  std::string shape = "(";
  for (size_t i = 0; i < t.rank(); ++i) shape += std::to_string(t.shape()[i]) + (t.rank() == 1 ? "," : (i + 1 < t.rank() ? ", " : ""));
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  out.append(static_cast<const char*>(t.data()), static_cast<size_t>(t.numel()) * ir::dtype_size(t.dtype()));
  return out;
}

Status write_npy(const std::string& path, const ir::Tensor& t) {
  // Write to a temporary file and rename, so a failure leaves no half file.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return Status(Code::kIo, path + ": cannot write");
    const std::string bytes = format_npy(t);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) return Status(Code::kIo, path + ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return Status(Code::kIo, path + ": cannot rename the written file into place");
  return Status::ok();
}

}  // namespace shapejit::tools
