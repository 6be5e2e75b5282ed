#include "io/markup.h"

namespace sdc::io {

void append_escaped_markup(std::string& text, std::string_view raw) {
  for (const char c : raw) {
    switch (c) {
      case '&':
        text += "&amp;";
        break;
      case '<':
        text += "&lt;";
        break;
      case '>':
        text += "&gt;";
        break;
      case '"':
        text += "&quot;";
        break;
      case '\'':
        text += "&#39;";
        break;
      default:
        text += c;
    }
  }
}

std::string escape_markup(std::string_view raw) {
  std::string text;
  text.reserve(raw.size());
  append_escaped_markup(text, raw);
  return text;
}

}  // namespace sdc::io
