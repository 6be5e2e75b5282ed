#pragma once
// Text put into SVG or HTML: the figures sdc writes (io/sparsity_svg.h, engine/report/) carry names
// from files and reports, which must read as text, never as markup.

#include <string>
#include <string_view>

namespace sdc::io {

/// Appends `raw` to `text` with the characters markup gives a meaning (& < > " ') as entities, fit for
/// element text and attribute values alike.
void append_escaped_markup(std::string& text, std::string_view raw);

/// `raw` escaped as append_escaped_markup does.
std::string escape_markup(std::string_view raw);

}  // namespace sdc::io
