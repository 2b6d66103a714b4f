/* The decision models of the DCB example "course subscriptions"
 * (tests/fixtures/dcb-examples/course-subscriptions.json, its `projections`), shared by the
 * commands define-course, change-course-capacity and subscribe-student-to-course.
 * Each returns the model bound to its parameters (text slices the caller keeps alive: the
 * command input). The events they read carry the tags of their tag resolvers:
 *   CourseDefined, CourseCapacityChanged   course:{courseId}
 *   StudentSubscribedToCourse              student:{studentId}, course:{courseId}
 * Thread ownership: guests are single-threaded. */
#ifndef REEF_EXAMPLES_COURSE_MODELS_H
#define REEF_EXAMPLES_COURSE_MODELS_H

#include "dcb.h"

/* courseExists(courseId): false; CourseDefined -> true. */
dcb_model course_exists(reef_str course_id);
/* courseCapacity(courseId): 0; CourseDefined -> data.capacity,
 * CourseCapacityChanged -> data.newCapacity. */
dcb_model course_capacity(reef_str course_id);
/* numberOfCourseSubscriptions(courseId): 0; StudentSubscribedToCourse -> state + 1. */
dcb_model number_of_course_subscriptions(reef_str course_id);
/* numberOfStudentSubscriptions(studentId): 0; StudentSubscribedToCourse -> state + 1. */
dcb_model number_of_student_subscriptions(reef_str student_id);
/* studentAlreadySubscribed(studentId, courseId): false; StudentSubscribedToCourse -> true. */
dcb_model student_already_subscribed(reef_str student_id, reef_str course_id);

/* The tags of the success events, from the tag resolvers above. */
static inline reef_str course_tag(reef_str course_id) {
  return dcb_tag("course:", course_id);
}
static inline reef_str student_tag(reef_str student_id) {
  return dcb_tag("student:", student_id);
}

#endif /* REEF_EXAMPLES_COURSE_MODELS_H */
