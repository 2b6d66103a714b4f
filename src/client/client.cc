// Placeholder until the client lands (issue 4).
namespace reef::client {}
