#include "registry/avro_codec.h"

#include <fmt/format.h>

#include <cstring>

namespace sluice::registry::avro {

using common::InvalidArgument;
using common::Result;
using common::Status;
using nlohmann::json;

void WriteLong(std::int64_t v, std::string& out) {
  std::uint64_t z = (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
  while (z > 0x7f) {
    out.push_back(static_cast<char>((z & 0x7f) | 0x80));
    z >>= 7;
  }
  out.push_back(static_cast<char>(z));
}

Result<std::int64_t> ReadLong(std::string_view data, size_t& pos) {
  std::uint64_t z = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos >= data.size()) return InvalidArgument("truncated varint");
    auto b = static_cast<std::uint8_t>(data[pos++]);
    z |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1));
  }
  return InvalidArgument("varint longer than 10 bytes");
}

Result<std::string_view> ReadBytes(std::string_view data, size_t& pos) {
  auto len = ReadLong(data, pos);
  if (!len.ok()) return len.status();
  if (*len < 0 || static_cast<std::uint64_t>(*len) > data.size() - pos)
    return InvalidArgument("truncated Avro data");
  std::string_view b = data.substr(pos, *len);
  pos += *len;
  return b;
}

namespace {

// Deep enough for any envelope; a recursive record's data cannot take the
// stack with it.
constexpr int kMaxSkipDepth = 64;

Status SkipAt(const Node& n, std::string_view data, size_t& pos, int depth) {
  if (depth > kMaxSkipDepth) return InvalidArgument("Avro datum nested too deeply");
  auto need = [&](size_t bytes) {
    if (bytes > data.size() - pos) return InvalidArgument("truncated Avro data");
    pos += bytes;
    return Status::Ok();
  };
  switch (n.type) {
    case Type::kNull:
      return Status::Ok();
    case Type::kBoolean:
      return need(1);
    case Type::kFloat:
      return need(4);
    case Type::kDouble:
      return need(8);
    case Type::kFixed:
      return need(static_cast<size_t>(n.size));
    case Type::kInt:
    case Type::kLong:
    case Type::kEnum:
      return ReadLong(data, pos).status();
    case Type::kString:
    case Type::kBytes:
      return ReadBytes(data, pos).status();
    case Type::kArray:
    case Type::kMap:
      while (true) {
        auto count = ReadLong(data, pos);
        if (!count.ok()) return count.status();
        if (*count == 0) return Status::Ok();
        std::int64_t c = *count;
        if (c < 0) {  // a byte size follows: the block is stepped over whole
          auto size = ReadLong(data, pos);
          if (!size.ok()) return size.status();
          if (*size < 0) return InvalidArgument("negative Avro block size");
          SLUICE_RETURN_IF_ERROR(need(static_cast<size_t>(*size)));
          continue;
        }
        // As Decode: a count beyond the bytes left is refused, not looped over.
        if (static_cast<std::uint64_t>(c) > data.size() - pos + 1)
          return InvalidArgument("truncated Avro data");
        for (std::int64_t i = 0; i < c; ++i) {
          if (n.type == Type::kMap) SLUICE_RETURN_IF_ERROR(ReadBytes(data, pos).status());
          SLUICE_RETURN_IF_ERROR(
              SkipAt(n.type == Type::kArray ? *n.items : *n.values, data, pos, depth + 1));
        }
      }
    case Type::kRecord:
      for (const auto& f : n.fields) SLUICE_RETURN_IF_ERROR(SkipAt(*f.type, data, pos, depth + 1));
      return Status::Ok();
    case Type::kUnion: {
      auto i = ReadLong(data, pos);
      if (!i.ok()) return i.status();
      if (*i < 0 || *i >= static_cast<std::int64_t>(n.branches.size()))
        return InvalidArgument(fmt::format("union branch {} out of range", *i));
      return SkipAt(*n.branches[*i], data, pos, depth + 1);
    }
  }
  return InvalidArgument("unknown type");
}

}  // namespace

Status Skip(const Node& node, std::string_view data, size_t& pos) {
  return SkipAt(node, data, pos, 0);
}

namespace {

// Avro's JSON form of bytes: each code point 0-255 is one byte.
Result<std::string> StringToBytes(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<std::uint8_t>(s[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < s.size()) {
      std::uint32_t cp = ((c & 0x1F) << 6) | (static_cast<std::uint8_t>(s[i + 1]) & 0x3F);
      if (cp > 0xFF) return InvalidArgument("bytes value has a code point above 255");
      out.push_back(static_cast<char>(cp));
      i += 2;
    } else {
      return InvalidArgument("bytes value has a code point above 255");
    }
  }
  return out;
}

std::string BytesToString(std::string_view b) {
  std::string out;
  for (char ch : b) {
    auto c = static_cast<std::uint8_t>(ch);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

std::string BranchName(const Node& n) { return n.is_named() ? n.full_name : TypeName(n.type); }

bool Accepts(const Node& n, const json& v) {
  switch (n.type) {
    case Type::kNull:
      return v.is_null();
    case Type::kBoolean:
      return v.is_boolean();
    case Type::kInt:
      return v.is_number_integer() && v.get<std::int64_t>() >= INT32_MIN &&
             v.get<std::int64_t>() <= INT32_MAX;
    case Type::kLong:
      return v.is_number_integer();
    case Type::kFloat:
    case Type::kDouble:
      return v.is_number();
    case Type::kBytes:
    case Type::kString:
      return v.is_string();
    case Type::kFixed:
      return v.is_string();
    case Type::kEnum:
      return v.is_string() &&
             std::find(n.symbols.begin(), n.symbols.end(), v.get<std::string>()) != n.symbols.end();
    case Type::kArray:
      return v.is_array();
    case Type::kMap:
      return v.is_object();
    case Type::kRecord:
      return v.is_object();
    case Type::kUnion:
      return false;
  }
  return false;
}

Status EncodeNode(const Node& n, const json& v, std::string& out, const std::string& path) {
  auto bad = [&] {
    return InvalidArgument(fmt::format("{}: {} is not a {}", path.empty() ? "/" : path,
                                       v.dump().substr(0, 80), BranchName(n)));
  };
  switch (n.type) {
    case Type::kNull:
      return v.is_null() ? Status::Ok() : bad();
    case Type::kBoolean:
      if (!v.is_boolean()) return bad();
      out.push_back(v.get<bool>() ? 1 : 0);
      return Status::Ok();
    case Type::kInt:
    case Type::kLong:
      if (!Accepts(n, v)) return bad();
      if (v.is_number_unsigned() && v.get<std::uint64_t>() > INT64_MAX) return bad();
      WriteLong(v.get<std::int64_t>(), out);
      return Status::Ok();
    case Type::kFloat: {
      if (!v.is_number()) return bad();
      float f = v.get<float>();
      char buf[4];
      std::memcpy(buf, &f, 4);  // Avro is little-endian, as is every host we build for
      out.append(buf, 4);
      return Status::Ok();
    }
    case Type::kDouble: {
      if (!v.is_number()) return bad();
      double d = v.get<double>();
      char buf[8];
      std::memcpy(buf, &d, 8);
      out.append(buf, 8);
      return Status::Ok();
    }
    case Type::kString:
      if (!v.is_string()) return bad();
      WriteLong(static_cast<std::int64_t>(v.get_ref<const std::string&>().size()), out);
      out += v.get_ref<const std::string&>();
      return Status::Ok();
    case Type::kBytes:
    case Type::kFixed: {
      if (!v.is_string()) return bad();
      auto bytes = StringToBytes(v.get<std::string>());
      if (!bytes.ok()) return InvalidArgument(path + ": " + bytes.status().message());
      if (n.type == Type::kFixed) {
        if (static_cast<int>(bytes->size()) != n.size) {
          return InvalidArgument(fmt::format("{}: fixed {} needs {} bytes, got {}", path,
                                             n.full_name, n.size, bytes->size()));
        }
      } else {
        WriteLong(static_cast<std::int64_t>(bytes->size()), out);
      }
      out += *bytes;
      return Status::Ok();
    }
    case Type::kEnum: {
      if (!v.is_string()) return bad();
      auto it = std::find(n.symbols.begin(), n.symbols.end(), v.get<std::string>());
      if (it == n.symbols.end()) return bad();
      WriteLong(it - n.symbols.begin(), out);
      return Status::Ok();
    }
    case Type::kArray:
      if (!v.is_array()) return bad();
      if (!v.empty()) {
        WriteLong(static_cast<std::int64_t>(v.size()), out);
        for (size_t i = 0; i < v.size(); ++i) {
          SLUICE_RETURN_IF_ERROR(EncodeNode(*n.items, v[i], out, path + "/" + std::to_string(i)));
        }
      }
      WriteLong(0, out);
      return Status::Ok();
    case Type::kMap:
      if (!v.is_object()) return bad();
      if (!v.empty()) {
        WriteLong(static_cast<std::int64_t>(v.size()), out);
        for (const auto& [k, e] : v.items()) {
          WriteLong(static_cast<std::int64_t>(k.size()), out);
          out += k;
          SLUICE_RETURN_IF_ERROR(EncodeNode(*n.values, e, out, path + "/" + k));
        }
      }
      WriteLong(0, out);
      return Status::Ok();
    case Type::kRecord:
      if (!v.is_object()) return bad();
      for (const auto& f : n.fields) {
        auto it = v.find(f.name);
        const json* fv = nullptr;
        if (it != v.end()) {
          fv = &*it;
        } else if (f.default_value) {
          fv = &*f.default_value;
        } else {
          return InvalidArgument(fmt::format("{}/{}: missing field with no default", path, f.name));
        }
        SLUICE_RETURN_IF_ERROR(EncodeNode(*f.type, *fv, out, path + "/" + f.name));
      }
      return Status::Ok();
    case Type::kUnion: {
      // Wrapped form first: {"branch": value}.
      if (v.is_object() && v.size() == 1) {
        const std::string& key = v.begin().key();
        for (size_t i = 0; i < n.branches.size(); ++i) {
          const Node& b = *n.branches[i];
          if (BranchName(b) == key || (b.is_named() && b.name == key)) {
            WriteLong(static_cast<std::int64_t>(i), out);
            return EncodeNode(b, v.begin().value(), out, path);
          }
        }
      }
      for (size_t i = 0; i < n.branches.size(); ++i) {
        if (!Accepts(*n.branches[i], v)) continue;
        std::string attempt;
        WriteLong(static_cast<std::int64_t>(i), attempt);
        if (EncodeNode(*n.branches[i], v, attempt, path).ok()) {
          out += attempt;
          return Status::Ok();
        }
      }
      return InvalidArgument(
          fmt::format("{}: {} matches no branch of the union", path, v.dump().substr(0, 80)));
    }
  }
  return bad();
}

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  size_t pos() const { return pos_; }

  Result<json> Read(const Node& n) {
    switch (n.type) {
      case Type::kNull:
        return json(nullptr);
      case Type::kBoolean: {
        if (pos_ >= data_.size()) return Truncated();
        auto b = static_cast<std::uint8_t>(data_[pos_++]);
        if (b > 1) return InvalidArgument("boolean byte is not 0 or 1");
        return json(b == 1);
      }
      case Type::kInt:
      case Type::kLong: {
        auto v = ReadLong(data_, pos_);
        if (!v.ok()) return v.status();
        if (n.type == Type::kInt && (*v < INT32_MIN || *v > INT32_MAX)) {
          return InvalidArgument("int out of range");
        }
        return json(*v);
      }
      case Type::kFloat: {
        if (pos_ + 4 > data_.size()) return Truncated();
        float f;
        std::memcpy(&f, data_.data() + pos_, 4);
        pos_ += 4;
        return json(f);
      }
      case Type::kDouble: {
        if (pos_ + 8 > data_.size()) return Truncated();
        double d;
        std::memcpy(&d, data_.data() + pos_, 8);
        pos_ += 8;
        return json(d);
      }
      case Type::kString:
      case Type::kBytes: {
        auto bytes = ReadBytes();
        if (!bytes.ok()) return bytes.status();
        if (n.type == Type::kString) return json(std::string(*bytes));
        return json(BytesToString(*bytes));
      }
      case Type::kFixed: {
        if (pos_ + n.size > data_.size()) return Truncated();
        std::string_view b = data_.substr(pos_, n.size);
        pos_ += n.size;
        return json(BytesToString(b));
      }
      case Type::kEnum: {
        auto i = ReadLong(data_, pos_);
        if (!i.ok()) return i.status();
        if (*i < 0 || *i >= static_cast<std::int64_t>(n.symbols.size())) {
          return InvalidArgument(fmt::format("enum index {} out of range", *i));
        }
        return json(n.symbols[*i]);
      }
      case Type::kArray:
      case Type::kMap: {
        json out = n.type == Type::kArray ? json::array() : json::object();
        while (true) {
          auto count = ReadLong(data_, pos_);
          if (!count.ok()) return count.status();
          if (*count == 0) break;
          std::int64_t c = *count;
          if (c < 0) {  // negative count: a byte size follows
            c = -c;
            auto size = ReadLong(data_, pos_);
            if (!size.ok()) return size.status();
          }
          if (c > static_cast<std::int64_t>(data_.size() - pos_) + 1) return Truncated();
          for (std::int64_t i = 0; i < c; ++i) {
            if (n.type == Type::kArray) {
              auto e = Read(*n.items);
              if (!e.ok()) return e.status();
              out.push_back(std::move(*e));
            } else {
              auto k = ReadBytes();
              if (!k.ok()) return k.status();
              auto e = Read(*n.values);
              if (!e.ok()) return e.status();
              out[std::string(*k)] = std::move(*e);
            }
          }
        }
        return out;
      }
      case Type::kRecord: {
        json out = json::object();
        for (const auto& f : n.fields) {
          auto v = Read(*f.type);
          if (!v.ok()) return v.status();
          out[f.name] = std::move(*v);
        }
        return out;
      }
      case Type::kUnion: {
        auto i = ReadLong(data_, pos_);
        if (!i.ok()) return i.status();
        if (*i < 0 || *i >= static_cast<std::int64_t>(n.branches.size())) {
          return InvalidArgument(fmt::format("union branch {} out of range", *i));
        }
        return Read(*n.branches[*i]);
      }
    }
    return InvalidArgument("unknown type");
  }

 private:
  static Status Truncated() { return InvalidArgument("truncated Avro data"); }

  Result<std::string_view> ReadBytes() { return avro::ReadBytes(data_, pos_); }

  std::string_view data_;
  size_t pos_ = 0;
};

}  // namespace

Status Encode(const Schema& schema, const json& datum, std::string& out) {
  return EncodeNode(schema.root(), datum, out, "");
}

Result<std::string> Encode(const Schema& schema, const json& datum) {
  std::string out;
  SLUICE_RETURN_IF_ERROR(Encode(schema, datum, out));
  return out;
}

Result<json> Decode(const Schema& schema, std::string_view bytes) {
  Reader r(bytes);
  auto v = r.Read(schema.root());
  if (!v.ok()) return v.status();
  if (r.pos() != bytes.size()) {
    return InvalidArgument(
        fmt::format("{} trailing bytes after the datum", bytes.size() - r.pos()));
  }
  return v;
}

}  // namespace sluice::registry::avro
