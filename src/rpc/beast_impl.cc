// Separate compilation unit for Boost.Beast (BOOST_BEAST_SEPARATE_COMPILATION).
#include <boost/beast/src.hpp>
