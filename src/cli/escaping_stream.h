// An output stream that passes text through to another one with every terminal control byte
// escaped: C0 controls other than newline and tab, DEL and the C1 controls (U+0080..U+009F as
// UTF-8) become \xNN / \u00NN. The DB commands print through it, so no text read from a profile
// (an ENUM name, a META_DATA value, a file name) can send the terminal an escape sequence, whichever
// message it reaches. Names that go into tables are already made printable (base::PrintableText);
// this is the net for everything else. Not thread-safe, like the stream it wraps.
#pragma once

#include <ostream>
#include <streambuf>

namespace gpuprof::cli {

class EscapingStreambuf final : public std::streambuf {
 public:
  explicit EscapingStreambuf(std::streambuf* sink) : sink_(sink) {}
  ~EscapingStreambuf() override { FlushPending(); }
  EscapingStreambuf(const EscapingStreambuf&) = delete;
  EscapingStreambuf& operator=(const EscapingStreambuf&) = delete;

 protected:
  int_type overflow(int_type ch) override {
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    Put(static_cast<unsigned char>(traits_type::to_char_type(ch)));
    return ch;
  }
  std::streamsize xsputn(const char* text, std::streamsize count) override {
    for (std::streamsize i = 0; i < count; ++i) Put(static_cast<unsigned char>(text[i]));
    return count;
  }
  int sync() override {
    FlushPending();
    return sink_->pubsync();
  }

 private:
  void Put(unsigned char c) {
    static constexpr char kHex[] = "0123456789abcdef";
    if (pending_c2_) {
      pending_c2_ = false;
      if (c >= 0x80 && c <= 0x9F) {
        const char escaped[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xf]};
        sink_->sputn(escaped, sizeof(escaped));
        return;
      }
      sink_->sputc(static_cast<char>(0xC2));
    }
    if (c == 0xC2) {
      pending_c2_ = true;  // the lead byte of U+0080..U+00BF: decided by the next byte
    } else if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      const char escaped[] = {'\\', 'x', kHex[c >> 4], kHex[c & 0xf]};
      sink_->sputn(escaped, sizeof(escaped));
    } else {
      sink_->sputc(static_cast<char>(c));
    }
  }
  void FlushPending() {
    if (pending_c2_) sink_->sputc(static_cast<char>(0xC2));
    pending_c2_ = false;
  }

  std::streambuf* sink_;
  bool pending_c2_ = false;
};

// `EscapingOutput out(std::cout);` then write to `out.stream()`.
class EscapingOutput {
 public:
  explicit EscapingOutput(std::ostream& sink) : buffer_(sink.rdbuf()), stream_(&buffer_) {}
  ~EscapingOutput() { stream_.flush(); }
  EscapingOutput(const EscapingOutput&) = delete;
  EscapingOutput& operator=(const EscapingOutput&) = delete;
  std::ostream& stream() noexcept { return stream_; }

 private:
  EscapingStreambuf buffer_;
  std::ostream stream_;
};

}  // namespace gpuprof::cli
