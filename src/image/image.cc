// Placeholder until the image lands (issue 4).
namespace reef::image {}
