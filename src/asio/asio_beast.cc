// The compiled part of Boost.Asio and Boost.Beast (src/asio/CMakeLists.txt explains why).
#include <boost/asio/impl/src.hpp>
#include <boost/beast/src.hpp>
