#pragma once
#include <string>

namespace sdc::io {
/// Now, or SOURCE_DATE_EPOCH when it is set (reproducible builds' convention, so that equal content
/// can give byte-equal files), as "YYYY-MM-DDTHH:MM:SSZ".
std::string utc_timestamp();
}  // namespace sdc::io
